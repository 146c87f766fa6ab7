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
#[path = "exposure_tests.rs"]
mod tests;
