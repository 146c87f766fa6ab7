//! The tool-call guard: what a call's arguments may reach.
//!
//! augur sees every tool call before the client runs it, and agents run
//! calls without asking. [`ssrf`] says whether a URL or host argument
//! points inside the network (loopback, private, link-local, cloud
//! metadata…), exactly as the clients that will fetch it read the URL,
//! and [`readers`] which URLs those clients read differently; [`rules`]
//! is `tools.guard` of a policy (names allowed and denied, risk levels,
//! argument rules with an action each), [`arguments`] reads a call's
//! arguments as the client will, [`values`] checks the values a rule
//! points at, and [`check`] judges one call against the guard.

pub(crate) mod arguments;
pub(crate) mod check;
mod paths;
pub(crate) mod readers;
pub(crate) mod rules;
pub(crate) mod ssrf;
pub(crate) mod values;

pub(crate) use arguments::read as read_arguments;
pub(crate) use check::Verdict;
pub(crate) use rules::{Action, Guard, RawGuard, Risk, compile};
pub use ssrf::{Reach, classify_ip, classify_url};
