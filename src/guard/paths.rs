//! Paths as the server that opens them reads them, for `path_prefix`
//! rules: percent-escapes decoded (repeatedly), `\` read as `/`, `.` and
//! `..` applied.

/// Whether normalized path `p` is `prefix` or under it.
pub(super) fn under(p: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty() || p == prefix || p.starts_with(&format!("{prefix}/"))
}

/// An absolute path with percent-escapes decoded, `\` read as `/`, empty
/// and `.` segments dropped and `..` applied; `None` when it is not
/// absolute, climbs above the root, or holds a NUL.
pub(super) fn normal_path(text: &str) -> Option<String> {
    let decoded = percent_decode(text)?;
    let slashed = decoded.replace('\\', "/");
    if !slashed.starts_with('/') || slashed.contains('\0') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in slashed.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// `text` with `%XX` decoded, repeatedly (a double-encoded `%252e` is a
/// `.` to a server that decodes twice); `None` for invalid UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let mut s = text.to_string();
    for _ in 0..4 {
        if !s.contains('%') {
            break;
        }
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if b[i] == b'%'
                && let (Some(h), Some(l)) = (
                    b.get(i + 1).and_then(|c| hex(*c)),
                    b.get(i + 2).and_then(|c| hex(*c)),
                )
            {
                out.push((h * 16 + l) as u8);
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        let next = String::from_utf8(out).ok()?;
        if next == s {
            break;
        }
        s = next;
    }
    Some(s)
}
