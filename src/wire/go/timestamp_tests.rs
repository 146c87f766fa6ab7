//! Unit tests of `timestamp`.

use super::*;

#[test]
fn go_time_trims_zeros() {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(1_761_498_924_097_700_000).unwrap();
    assert_eq!(format_go_time(t), "2025-10-26T17:15:24.0977Z");
    let t = time::OffsetDateTime::from_unix_timestamp(1_761_498_924).unwrap();
    assert_eq!(format_go_time(t), "2025-10-26T17:15:24Z");
}

#[test]
fn timestamps_read_back() {
    assert_eq!(
        unix_seconds("2025-10-26T17:15:24.0977Z"),
        Some(1_761_498_924)
    );
    assert_eq!(unix_seconds("2025-10-26T17:15:24Z"), Some(1_761_498_924));
    assert_eq!(
        unix_seconds("2025-10-26T19:15:24+02:00"),
        Some(1_761_498_924)
    );
    assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
    for bad in [
        "",
        "now",
        "2025-13-01T00:00:00Z",
        "2025-10-26T17:15:24",
        "2025-10-26T17:15:24.Z",
    ] {
        assert_eq!(unix_seconds(bad), None, "{bad}");
    }
}
