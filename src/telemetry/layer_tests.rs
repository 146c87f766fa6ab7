//! Unit tests of `layer`.

use super::*;

/// The access log record survives data frames and is written when the
/// body ends.
#[tokio::test]
async fn the_record_is_kept_until_the_body_ends() {
    use http_body_util::BodyExt;

    let chunks = futures_util::stream::iter(["a", "b"].map(Ok::<_, std::io::Error>));
    let mut body = Box::pin(ObservedBody {
        inner: Body::from_stream(chunks),
        finish: Some(Finish {
            started: Instant::now(),
            timing: Arc::default(),
            method: http::Method::POST,
            route: "/api/chat",
            status: 200,
            reported: None,
            request_id: HeaderValue::from_static("-"),
            streaming: true,
            events: Vec::new(),
            ring: Arc::default(),
        }),
    });
    for _ in 0..2 {
        assert!(body.frame().await.unwrap().unwrap().is_data());
        assert!(body.finish.is_some(), "recorded before the end");
    }
    assert!(body.frame().await.is_none());
    assert!(body.finish.is_none(), "recorded at the end");
}
