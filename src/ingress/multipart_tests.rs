//! Unit tests of `multipart`.

use super::*;

fn form(parts: &[(&str, &str)]) -> Vec<u8> {
    let mut b = String::new();
    for (head, data) in parts {
        b.push_str(&format!("--XyZ\r\n{head}\r\n\r\n{data}\r\n"));
    }
    b.push_str("--XyZ--\r\n");
    b.into_bytes()
}

#[test]
fn a_form_is_read_and_re_encoded() {
    let body = form(&[
        ("Content-Disposition: form-data; name=\"model\"", "whisper"),
        (
            "content-disposition: form-data; name=\"file\"; filename=\"a \\\"b\\\".wav\"\r\nContent-Type: audio/wav",
            "RIFF....",
        ),
        ("Content-Disposition: form-data; name=\"temperature\"", "0"),
    ]);
    let f = parse(&body, "XyZ").unwrap();
    assert_eq!(f.model().as_deref(), Some("whisper"));
    assert_eq!(f.fields.len(), 2, "unread fields are dropped");
    assert_eq!(f.fields[1].filename.as_deref(), Some("a \"b\".wav"));
    let (ct, encoded) = f.encode("augur-1");
    assert_eq!(ct, "multipart/form-data; boundary=augur-1");
    assert_eq!(parse(&encoded, "augur-1").unwrap(), f);
}

#[test]
fn what_is_not_plain_is_refused() {
    let dup = form(&[
        ("Content-Disposition: form-data; name=\"model\"", "a"),
        ("Content-Disposition: form-data; name=\"model\"", "b"),
    ]);
    assert!(matches!(parse(&dup, "XyZ"), Err(FormError::Duplicate(_))));
    for head in [
        "Content-Disposition: form-data; name*=UTF-8''model",
        "Content-Disposition: form-data; name=\"model\"; name=\"x\"",
        "Content-Disposition: attachment; name=\"model\"",
        "Content-Disposition: form-data; name=\"model\"\r\nContent-Disposition: form-data; name=\"x\"",
        " Content-Disposition: form-data; name=\"model\"",
        "Content-Disposition: form-data",
    ] {
        let body = form(&[(head, "a")]);
        assert!(parse(&body, "XyZ").is_err(), "{head}");
    }
    assert!(
        parse(
            b"--XyZ\nContent-Disposition: form-data; name=\"model\"\n\na\n--XyZ--",
            "XyZ"
        )
        .is_err()
    );
    assert!(parse(b"preamble\r\n--XyZ--\r\n", "XyZ").is_err());
}

#[test]
fn boundaries_are_read_from_the_content_type() {
    assert_eq!(
        boundary("multipart/form-data; boundary=abc").unwrap(),
        "abc"
    );
    assert_eq!(
        boundary("Multipart/Form-Data; charset=x; boundary=\"a b\"").unwrap(),
        "a b"
    );
    for ct in [
        "application/json",
        "multipart/form-data",
        "multipart/form-data; boundary=a; boundary=b",
        "multipart/form-data; boundary=\"a",
        "multipart/form-data; boundary=",
    ] {
        assert!(boundary(ct).is_err(), "{ct}");
    }
}
