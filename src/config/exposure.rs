//! No open door by accident: what augur refuses to serve at start.
//!
//! - The main listener on a non-loopback address with no API key in the
//!   policies: anyone who can reach the port could generate and list
//!   models. augur refuses to start unless the operator says so
//!   (`--allow-unauthenticated`, `server.allow_unauthenticated = true`).
//!   Management routes need the `manage` scope whatever this says.
//! - The admin listener on a non-loopback address with no admin token: it
//!   shows upstream addresses, loaded models and the policy in force.
//!   augur refuses to start without `--admin-token` (`AUGUR_ADMIN_TOKEN`,
//!   `server.admin_token`).

use std::net::SocketAddr;

#[cfg(test)]
use super::secret::Secret;
use super::settings::Config;

/// Whether only this machine can reach `addr`.
fn local(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

impl Config {
    /// Refuse an open door: see the module docs. `keys` is how many API
    /// keys the policies define.
    pub fn check_exposure(&self, keys: usize) -> Result<(), String> {
        if !local(&self.listen) && keys == 0 && !self.allow_unauthenticated {
            return Err(format!(
                "refusing to listen on {} with no API keys: anyone who reaches it could use \
                 every model. Define keys in a policy file (auth.keys), or listen on a loopback \
                 address, or pass --allow-unauthenticated (server.allow_unauthenticated = true) \
                 to serve without keys on purpose",
                self.listen
            ));
        }
        if !local(&self.admin_listen) && self.admin_token.is_none() {
            return Err(format!(
                "refusing to serve the admin listener on {} without a token: it shows upstream \
                 addresses, loaded models and the policy. Set AUGUR_ADMIN_TOKEN (--admin-token, \
                 server.admin_token), or listen on a loopback address",
                self.admin_listen
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
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
}
