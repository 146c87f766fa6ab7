//! The downstream client: where its requests come from ([`info`]) and its
//! socket as the HTTP server sees it ([`io`]).

pub(crate) mod info;
pub(crate) mod io;

pub use info::ClientInfo;
pub(crate) use io::ClientIo;
