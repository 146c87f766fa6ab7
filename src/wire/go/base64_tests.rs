//! Unit tests of `base64`.

use super::*;

#[test]
fn base64_errors_name_the_byte_go_names() {
    assert_eq!(base64_std(""), Ok(()));
    assert_eq!(base64_std("QUJD"), Ok(()));
    assert_eq!(base64_std("QUI="), Ok(()));
    assert_eq!(base64_std("QQ=="), Ok(()));
    assert_eq!(base64_std("QU\r\nJD\n"), Ok(()));
    assert_eq!(base64_std("QQ=\n="), Ok(()));
    // Missing padding, bad characters, bad padding, trailing garbage.
    assert_eq!(base64_std("QQ"), Err(0));
    assert_eq!(base64_std("QUI"), Err(0));
    assert_eq!(base64_std("QUJDQ"), Err(4));
    assert_eq!(base64_std("QU!D"), Err(2));
    assert_eq!(base64_std("Q==="), Err(1));
    assert_eq!(base64_std("QQ="), Err(3));
    assert_eq!(base64_std("QQ=x"), Err(2));
    assert_eq!(base64_std("QUI=QUJD"), Err(4));
    assert_eq!(base64_std("not base64!"), Err(3));
}
