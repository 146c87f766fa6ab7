//! Timestamps as Go's `time.Time` writes them in JSON (RFC 3339 with
//! nanoseconds), and read back.

/// Now, formatted like Go's `time.Time` JSON in UTC: RFC 3339 with
/// nanoseconds, trailing zeros trimmed, `Z`.
pub(crate) fn created_at_now() -> String {
    format_go_time(time::OffsetDateTime::now_utc())
}

/// Format a UTC time the way Go's `time.RFC3339Nano` does.
pub(crate) fn format_go_time(t: time::OffsetDateTime) -> String {
    let nanos = t.nanosecond();
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    if nanos != 0 {
        let frac = format!("{nanos:09}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

/// The Unix seconds of an RFC 3339 timestamp as Ollama writes `created_at`
/// (`2025-10-26T17:15:24.0977Z`, or with a `±hh:mm` offset); `None` when
/// it is not one.
pub(crate) fn unix_seconds(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b.len() > 64 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't') || b[16] != b':' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let s = text.get(from..to)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &frac[digits..];
    }
    let offset = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digits = [*h1, *h2, *m1, *m2];
            if !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let d = |c: u8| i64::from(c - b'0');
            let minutes = (d(*h1) * 10 + d(*h2)) * 60 + d(*m1) * 10 + d(*m2);
            if *sign == b'-' { -minutes } else { minutes }
        }
        _ => return None,
    };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    Some(
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
            - offset * 60,
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
#[path = "timestamp_tests.rs"]
mod tests;
