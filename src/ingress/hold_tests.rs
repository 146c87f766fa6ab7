//! Unit tests of `hold`.

use std::net::{IpAddr, Ipv4Addr};

use http_body_util::BodyExt;

use super::*;
use crate::{
    limits::{Limits, Principal},
    policy::{Policy, RateLimit},
};

fn budget() -> (Limits, Policy, Principal) {
    let mut policy = Policy::permissive();
    policy.default_rate_limit = Some(RateLimit {
        tokens_per_minute: Some(1000),
        ..Default::default()
    });
    let who = Principal::anonymous(IpAddr::V4(Ipv4Addr::LOCALHOST));
    (Limits::new(), policy, who)
}

async fn held(limits: &Limits, policy: &Policy, who: &Principal, usage: Usage) -> Hold {
    let admission = limits.admit(policy, who, None, true, 0).await.unwrap();
    Hold {
        admission: Some(admission),
        usage: Arc::new(usage),
        invalidate: None,
        meter: None,
    }
}

/// A whole answer (one frame, known length) is charged at its last
/// frame: hyper does not poll such a body again to see its end.
#[tokio::test]
async fn a_whole_answer_is_charged_without_polling_past_its_end() {
    let (limits, policy, who) = budget();
    let h = held(&limits, &policy, &who, Usage::for_body(40)).await;
    let answer = r#"{"done":true,"prompt_eval_count":26,"eval_count":282}"#;
    let mut body = hold(Response::new(Body::from(answer)), h).into_body();
    let frame = body.frame().await.unwrap().unwrap();
    assert_eq!(frame.into_data().unwrap(), answer.as_bytes());
    assert!(body.is_end_stream());
    let left = limits.token_balance(&policy, &who).unwrap();
    assert!((690.0..=693.0).contains(&left), "{left}");
}

/// A stream without counts (an OpenAI stream without usage) is charged
/// the prompt estimate plus one token per event.
#[tokio::test]
async fn a_stream_without_counts_is_estimated() {
    let (limits, policy, who) = budget();
    let h = held(&limits, &policy, &who, Usage::for_body(400)).await;
    let mut response = Response::new(Body::from("data: {}\n\ndata: {}\n\ndata: [DONE]\n\n"));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    let body = hold(response, h).into_body();
    let _ = body.collect().await.unwrap();
    let left = limits.token_balance(&policy, &who).unwrap();
    assert!((896.0..=898.0).contains(&left), "100 + 3 charged: {left}");
}

/// A client that leaves after the first line is charged the prompt and
/// what it was sent, although the done chunk never came.
#[tokio::test]
async fn an_abandoned_stream_is_charged() {
    let (limits, policy, who) = budget();
    let h = held(&limits, &policy, &who, Usage::for_body(200)).await;
    let mut response = Response::new(Body::from_stream(futures_util::stream::iter([
        Ok::<_, std::io::Error>(Bytes::from("{\"done\":false}\n")),
        Ok(Bytes::from("{\"done\":false}\n")),
    ])));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/x-ndjson"),
    );
    let mut body = hold(response, h).into_body();
    let _ = body.frame().await.unwrap().unwrap();
    drop(body);
    let left = limits.token_balance(&policy, &who).unwrap();
    assert!((948.0..=950.0).contains(&left), "50 + 1 charged: {left}");
}

/// What the pipeline reported wins over the counts it rendered.
#[tokio::test]
async fn reported_usage_is_charged() {
    let (limits, policy, who) = budget();
    let usage = Usage::for_body(10);
    usage.report(Counts {
        input: 100,
        output: 200,
        eval_ns: None,
    });
    let h = held(&limits, &policy, &who, usage).await;
    let body = hold(Response::new(Body::from("{}")), h).into_body();
    let _ = body.collect().await.unwrap();
    let left = limits.token_balance(&policy, &who).unwrap();
    assert!((699.0..=701.0).contains(&left), "{left}");
}
