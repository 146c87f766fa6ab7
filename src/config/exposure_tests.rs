//! Unit tests of `exposure`.

use super::*;

fn config(listen: &str, admin: &str) -> Config {
    Config {
        listen: listen.parse().unwrap(),
        admin_listen: admin.parse().unwrap(),
        ..Config::default()
    }
}

#[test]
fn loopback_needs_nothing() {
    assert!(
        config("127.0.0.1:1", "127.0.0.1:2")
            .check_exposure(0)
            .is_ok()
    );
    assert!(config("[::1]:1", "[::1]:2").check_exposure(0).is_ok());
}

#[test]
fn a_public_listener_needs_keys_or_the_operators_word() {
    let c = config("0.0.0.0:1", "127.0.0.1:2");
    let e = c.check_exposure(0).unwrap_err();
    assert!(e.contains("--allow-unauthenticated"), "{e}");
    assert!(c.check_exposure(1).is_ok());
    let open = Config {
        allow_unauthenticated: true,
        ..c
    };
    assert!(open.check_exposure(0).is_ok());
    assert!(config("[::]:1", "127.0.0.1:2").check_exposure(0).is_err());
    assert!(
        config("10.1.2.3:1", "127.0.0.1:2")
            .check_exposure(0)
            .is_err()
    );
}

#[test]
fn a_public_admin_listener_needs_a_token() {
    let c = config("127.0.0.1:1", "0.0.0.0:2");
    let e = c.check_exposure(3).unwrap_err();
    assert!(e.contains("AUGUR_ADMIN_TOKEN"), "{e}");
    let with = Config {
        admin_token: Some(Secret("t".into())),
        ..c
    };
    assert!(with.check_exposure(3).is_ok());
    assert!(format!("{with:?}").contains("Secret(***)"));
    assert!(!format!("{with:?}").contains("\"t\""));
}
