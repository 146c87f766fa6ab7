//! The guarded body over scripted upstream bodies.

use std::io;

use futures_util::stream;
use http_body_util::{BodyExt, StreamBody};

use super::*;
use crate::error::Flavor;

type Script = Vec<Result<&'static str, &'static str>>;
type Scripted =
    StreamBody<futures_util::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, io::Error>>>>;

/// An upstream body that yields `script` (data, or an error), then ends.
fn upstream(script: Script) -> Scripted {
    let frames: Vec<Result<Frame<Bytes>, io::Error>> = script
        .into_iter()
        .map(|step| match step {
            Ok(data) => Ok(Frame::data(Bytes::from_static(data.as_bytes()))),
            Err(e) => Err(io::Error::new(io::ErrorKind::ConnectionAborted, e)),
        })
        .collect();
    StreamBody::new(stream::iter(frames))
}

fn guarded<B>(inner: B, terminator: Terminator) -> RelayBody<B>
where
    B: HttpBody<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    RelayBody::new(
        inner,
        terminator,
        Duration::from_millis(50),
        None,
        Instant::now(),
    )
}

/// What the client receives: the frames' bytes, one string per frame,
/// and whether the body ended in an error (an aborted connection).
async fn receive<B>(mut body: RelayBody<B>) -> (Vec<String>, bool)
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut frames = Vec::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                let data = frame.into_data().unwrap();
                frames.push(String::from_utf8(data.to_vec()).unwrap());
            }
            Err(_) => return (frames, true),
        }
    }
    (frames, false)
}

fn ndjson_cut() -> String {
    r#"{"error":"upstream connection closed before the response was complete"}"#.to_string() + "\n"
}

#[tokio::test]
async fn a_stream_cut_mid_line_drops_the_unfinished_line() {
    let body = guarded(
        upstream(vec![Ok("{\"a\":1}\n{\"b\""), Err("cut")]),
        Terminator::Ndjson,
    );
    let (frames, aborted) = receive(body).await;
    assert!(!aborted);
    assert_eq!(frames, vec!["{\"a\":1}\n".to_string(), ndjson_cut()]);
    let text = frames.concat();
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
}

#[tokio::test]
async fn a_stream_cut_before_its_first_line_is_just_the_error_line() {
    let body = guarded(upstream(vec![Ok("{\"a\""), Err("cut")]), Terminator::Ndjson);
    assert_eq!(receive(body).await, (vec![ndjson_cut()], false));
    let (frames, _) = receive(guarded(
        upstream(vec![Err("cut")]),
        Terminator::Sse(Flavor::OpenAi),
    ))
    .await;
    assert!(frames[0].starts_with("data: {\"error\""), "{frames:?}");
}

#[tokio::test]
async fn stream_lines_sent_in_pieces_go_out_whole_and_unchanged() {
    let script = vec![
        Ok("{\"a\""),
        Ok(":1}\n{\"b\":"),
        Ok("2}\n"),
        Ok("{\"c\":3}"),
    ];
    let (frames, aborted) = receive(guarded(upstream(script), Terminator::Ndjson)).await;
    assert!(!aborted);
    // The last line, without a newline, goes out when the stream ends.
    assert_eq!(frames, ["{\"a\":1}\n", "{\"b\":2}\n", "{\"c\":3}"]);
    // Whole lines pass through as they are.
    let script = vec![Ok("{\"a\":1}\n"), Ok("{\"b\":2}\n{\"c\":3}\n")];
    let (frames, _) = receive(guarded(upstream(script), Terminator::Ndjson)).await;
    assert_eq!(frames, ["{\"a\":1}\n", "{\"b\":2}\n{\"c\":3}\n"]);
}

#[tokio::test]
async fn a_line_too_long_to_hold_is_passed_on_and_the_error_starts_a_new_line() {
    let long: &'static str = "x".repeat(MAX_HELD_LINE + 1).leak();
    let body = guarded(upstream(vec![Ok(long), Err("cut")]), Terminator::Ndjson);
    let (frames, _) = receive(body).await;
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].len(), MAX_HELD_LINE + 1);
    assert_eq!(frames[1], format!("\n{}", ndjson_cut()));
}

#[tokio::test]
async fn an_sse_stream_cut_ends_with_an_error_event_of_its_own() {
    let script = vec![Ok("data: {}\n\ndata: {\"x\""), Err("cut")];
    let (frames, _) = receive(guarded(upstream(script), Terminator::Sse(Flavor::OpenAi))).await;
    assert_eq!(frames[0], "data: {}\n\n");
    assert!(frames[1].starts_with("data: {\"error\":{\"message\":"));
    assert!(frames[1].ends_with("}\n\n"));
    // Cut after a complete line of an event: the event is ended first.
    let script = vec![Ok("data: {}\n"), Err("cut")];
    let (frames, _) = receive(guarded(upstream(script), Terminator::Sse(Flavor::OpenAi))).await;
    assert_eq!(frames[0], "data: {}\n");
    assert!(frames[1].starts_with("\ndata: {\"error\""));
    // Anthropic's clients read an `error` event in Anthropic's shape.
    let script = vec![Ok("event: ping\ndata: {}\n\n"), Err("cut")];
    let (frames, _) = receive(guarded(
        upstream(script),
        Terminator::Sse(Flavor::Anthropic),
    ))
    .await;
    assert!(
        frames[1].starts_with(
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\""
        ),
        "{frames:?}"
    );
}

#[tokio::test]
async fn a_whole_body_cut_after_some_bytes_is_aborted_after_them() {
    let body = guarded(upstream(vec![Ok("{\"a\":"), Err("cut")]), Terminator::None);
    let (frames, aborted) = receive(body).await;
    assert_eq!(frames, ["{\"a\":"]);
    assert!(aborted);
}

#[tokio::test]
async fn a_whole_body_cut_before_its_first_byte_is_an_error_response() {
    let mut body = guarded(upstream(vec![Err("cut")]), Terminator::None);
    let e = Pin::new(&mut body).first_frame().await.unwrap_err();
    assert_eq!(e.status(), http::StatusCode::BAD_GATEWAY);

    let silent = StreamBody::new(stream::pending::<Result<Frame<Bytes>, io::Error>>());
    let mut body = guarded(silent, Terminator::None);
    let e = Pin::new(&mut body).first_frame().await.unwrap_err();
    assert_eq!(e.status(), http::StatusCode::GATEWAY_TIMEOUT);
}

#[tokio::test]
async fn the_first_frame_read_ahead_is_passed_on_first() {
    let mut body = guarded(upstream(vec![Ok("{\"a\""), Ok(":1}")]), Terminator::None);
    Pin::new(&mut body).first_frame().await.unwrap();
    assert!(!body.is_end_stream());
    let (frames, aborted) = receive(body).await;
    assert_eq!(frames, ["{\"a\"", ":1}"]);
    assert!(!aborted);
}

#[test]
fn trailing_newlines_are_counted_across_frames() {
    assert_eq!(trailing_newlines(0, b"a\n"), 1);
    assert_eq!(trailing_newlines(1, b"\n"), 2);
    assert_eq!(trailing_newlines(2, b"a"), 0);
    assert_eq!(trailing_newlines(0, b"a\r\n\r\n"), 2);
    assert_eq!(trailing_newlines(1, b""), 1);
}
