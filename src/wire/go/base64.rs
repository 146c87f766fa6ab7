//! Base64 checked the way Go's `encoding/base64` decodes it, where an
//! error text names the byte Go names.

/// Check `data` the way `base64.StdEncoding.DecodeString` decodes it
/// (padding required, `\r` and `\n` skipped): `Err(offset)` is the byte
/// Go's `CorruptInputError` names.
pub(crate) fn base64_std(data: &str) -> Result<(), usize> {
    let src = data.as_bytes();
    let mut si = 0;
    while si < src.len() {
        si = quantum(src, si)?;
    }
    Ok(())
}

fn is_b64(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'+' || c == b'/'
}

fn skip_newlines(src: &[u8], mut si: usize) -> usize {
    while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
        si += 1;
    }
    si
}

/// One 4-character quantum from `si` (Go's `decodeQuantum`).
fn quantum(src: &[u8], mut si: usize) -> Result<usize, usize> {
    let mut j = 0;
    while j < 4 {
        if si == src.len() {
            return if j == 0 { Ok(si) } else { Err(si - j) };
        }
        let c = src[si];
        si += 1;
        if is_b64(c) {
            j += 1;
            continue;
        }
        if c == b'\n' || c == b'\r' {
            continue;
        }
        if c != b'=' {
            return Err(si - 1);
        }
        match j {
            0 | 1 => return Err(si - 1),
            2 => {
                si = skip_newlines(src, si);
                if si == src.len() {
                    return Err(src.len());
                }
                if src[si] != b'=' {
                    return Err(si - 1);
                }
                si += 1;
            }
            _ => {}
        }
        si = skip_newlines(src, si);
        return if si < src.len() { Err(si) } else { Ok(si) };
    }
    Ok(si)
}

#[cfg(test)]
#[path = "base64_tests.rs"]
mod tests;
