//! A hit: the kept answer replayed, chunk for chunk, byte for byte, each
//! chunk its own frame (a one-chunk answer goes out with its length).

use axum::{body::Body, response::Response};
use bytes::Bytes;

use super::entry::{Entry, Lookup, X_AUGUR_CACHE};

/// The response a hit answers with.
pub(crate) fn replay(entry: &Entry) -> Response {
    let body = match entry.chunks.as_slice() {
        [] => Body::empty(),
        [one] => Body::from(one.clone()),
        many => {
            let chunks: Vec<Result<Bytes, std::io::Error>> = many.iter().cloned().map(Ok).collect();
            Body::from_stream(futures_util::stream::iter(chunks))
        }
    };
    let mut r = Response::new(body);
    r.headers_mut().extend(entry.headers.clone());
    r.headers_mut().insert(X_AUGUR_CACHE, Lookup::Hit.header());
    r
}
