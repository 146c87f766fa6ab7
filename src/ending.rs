//! How a request ended: one small vocabulary, decided in one place
//! ([`decide`]) at the end of every proxied request and reported the same
//! way by the access log (`outcome`), the request metrics (the `ending`
//! label of `augur_requests_total`), the status page (counts per ending)
//! and the request's trace span (`augur.ending`).
//!
//! What the response said when it started (its status, and the ending an
//! error response of augur's own carries) is not always how it ended: a
//! stream that began with 200 may be cut by the upstream, stall, or lose
//! its client. Whoever sees such an ending reports it; [`decide`] weighs
//! what was reported against how the body ended.

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ending {
    /// The whole response reached the client, and it is a success (a
    /// status below 400).
    Complete,
    /// augur turned the request away with a 4xx of its own (auth, scopes,
    /// limits, a request it cannot take), before or instead of asking a
    /// model.
    Refused,
    /// An error answer: the upstream's own error status passed on, an
    /// answer augur could not use or that still broke its schema, or an
    /// upstream that could not be reached.
    Error,
    /// The upstream closed the connection before its answer was complete
    /// (a stream then ends with an error line or event).
    UpstreamCut,
    /// The upstream did not begin to answer within `first_byte_timeout`,
    /// or stopped sending for `idle_timeout`.
    TimedOut,
    /// The client went away before the whole response reached it.
    ClientLeft,
}

impl Ending {
    /// Every ending, in the order the status page counts them.
    pub const ALL: [Ending; 6] = [
        Ending::Complete,
        Ending::Refused,
        Ending::Error,
        Ending::UpstreamCut,
        Ending::TimedOut,
        Ending::ClientLeft,
    ];

    /// The name the access log, metrics, status page and trace use.
    pub fn as_str(self) -> &'static str {
        match self {
            Ending::Complete => "complete",
            Ending::Refused => "refused",
            Ending::Error => "error",
            Ending::UpstreamCut => "upstream_cut",
            Ending::TimedOut => "timed_out",
            Ending::ClientLeft => "client_left",
        }
    }

    /// Its place in [`Ending::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The ending at `index` in [`Ending::ALL`].
    pub fn from_index(index: usize) -> Option<Ending> {
        Ending::ALL.get(index).copied()
    }

    /// Whether the upstream failed the request (the trace marks it an
    /// error).
    pub fn is_failure(self) -> bool {
        matches!(self, Ending::Error | Ending::UpstreamCut | Ending::TimedOut)
    }
}

/// How the response body left augur.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyEnd {
    /// Its last byte was handed to the connection.
    Whole,
    /// It ended in an error: the connection was aborted, the client saw
    /// an incomplete body.
    Failed,
    /// It was dropped before its end: the client went away.
    Dropped,
}

/// How a request ended: `reported` is what was said of it (by an error
/// response of augur's, or by whoever saw its upstream fail while the
/// body was sent), `body` how the body left, `status` the response status.
///
/// An upstream that failed is told even when the client left after it (it
/// is why the answer was incomplete); otherwise a client that left is;
/// then what was reported; then the status decides (below 400: complete).
pub(crate) fn decide(reported: Option<Ending>, body: BodyEnd, status: u16) -> Ending {
    match (reported, body) {
        (Some(e @ (Ending::UpstreamCut | Ending::TimedOut)), _) => e,
        (_, BodyEnd::Dropped) => Ending::ClientLeft,
        (_, BodyEnd::Failed) => reported.unwrap_or(Ending::Error),
        (Some(e), BodyEnd::Whole) => e,
        (None, BodyEnd::Whole) if status < 400 => Ending::Complete,
        (None, BodyEnd::Whole) => Ending::Error,
    }
}

#[cfg(test)]
#[path = "ending_tests.rs"]
mod tests;
