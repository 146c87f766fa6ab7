//! `augur replay`: recorded exchanges (see [`crate::record`]) read back
//! ([`tape`]), served as an Ollama upstream ([`server`]), or sent through
//! the current config and policies in front of that upstream to see what
//! a change alters ([`check`]); [`run`] is the subcommand.

mod check;
mod compare;
mod run;
mod server;
mod tape;

pub use run::run;
