//! A request's body as augur holds it, so that the request can be sent
//! again on another connection (see `resend` for when).

use bytes::Bytes;

/// A request's body as augur holds it, so the request can be sent again.
#[derive(Debug, Clone)]
pub struct Replay {
    pub(super) body: Bytes,
    /// It may be sent again after it was written (see the module doc).
    pub(super) after_write: bool,
}

impl Replay {
    /// `body`, sent again whenever its upstream never began to answer.
    pub fn new(body: Bytes) -> Self {
        Self {
            body,
            after_write: true,
        }
    }

    /// `body` of a request that changes the upstream's model store (pull,
    /// push, create, copy, delete): sent again on a new connection only
    /// when it was never written, as an upstream that read it may have
    /// acted on it.
    pub fn unwritten(body: Bytes) -> Self {
        Self {
            body,
            after_write: false,
        }
    }

    /// The body.
    pub fn body(&self) -> &Bytes {
        &self.body
    }
}
