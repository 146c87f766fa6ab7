//! The tool-call guard: what a call's arguments may reach.
//!
//! augur sees every tool call before the client runs it, and agents run
//! calls without asking. [`ssrf`] says whether a URL or host argument
//! points inside the network (loopback, private, link-local, cloud
//! metadata…), exactly as the clients that will fetch it read the URL;
//! [`rules`] is `tools.guard` of a policy (names allowed and denied, risk
//! levels, argument rules with an action each), and [`check`] judges one
//! call against it.

pub(crate) mod check;
pub(crate) mod rules;
pub(crate) mod ssrf;

pub use check::{Finding, Verdict};
pub use rules::{Action, Guard, RawGuard, Risk, compile};
pub use ssrf::{Inside, Reach, classify_host, classify_ip, classify_url, resolve};
