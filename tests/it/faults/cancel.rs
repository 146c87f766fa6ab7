//! A client that leaves cancels the upstream work at once, in every mode.

use std::time::{Duration, Instant};

use fake_ollama::FakeOllama;

use super::{
    client::{CANCEL_WITHIN, Leave, leave_in_every_mode},
    common::start_with,
    modes::{Mode, modes, pass_modes, retry_modes},
    until, with_policy,
};

#[tokio::test]
async fn a_client_that_leaves_cancels_the_upstream_in_every_mode() {
    let fake = FakeOllama::builder().start().await;
    let augur = start_with(&fake.url(), |_| {}).await;
    let mut failures = leave_in_every_mode(&fake, &augur, &modes(), Leave::Close, 0).await;
    let augur = with_policy(&fake, "defaults:\n  validate: {stream: pass}\n").await;
    failures.extend(leave_in_every_mode(&fake, &augur, &pass_modes(), Leave::Close, 0).await);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[tokio::test]
async fn a_client_that_leaves_is_noticed_whatever_it_sent_after_its_request() {
    let fake = FakeOllama::builder().start().await;
    let augur = start_with(&fake.url(), |_| {}).await;
    let modes: Vec<Mode> = modes()
        .into_iter()
        .filter(|m| {
            [
                "plain whole",
                "schema buffered",
                "tools stream",
                "openai tools whole",
            ]
            .contains(&m.name)
        })
        .collect();
    let mut failures = Vec::new();
    for how in [
        Leave::Reset,
        Leave::CloseAfterCrlf,
        Leave::CloseAfterPipelined,
    ] {
        failures.extend(leave_in_every_mode(&fake, &augur, &modes, how, 0).await);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[tokio::test]
async fn a_client_that_leaves_during_a_retry_gets_no_further_attempt() {
    let fake = FakeOllama::builder().start().await;
    let augur = with_policy(&fake, "defaults:\n  validate: {max_retries: 3}\n").await;
    let failures = leave_in_every_mode(&fake, &augur, &retry_modes(), Leave::Close, 1).await;
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Over HTTP/2, a client that resets its stream (it dropped the request
/// or the response) cancels the upstream work as well.
#[tokio::test]
async fn an_http2_stream_reset_cancels_the_upstream() {
    let fake = FakeOllama::builder().start().await;
    let augur = start_with(&fake.url(), |_| {}).await;
    let h2 = reqwest::Client::builder()
        .no_proxy()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let mut failures = Vec::new();
    for mode in modes() {
        let before = fake.bodies().len();
        let request = h2
            .post(format!("{}{}", augur.url, mode.path))
            .json(&mode.body)
            .send();
        // The request is dropped while it waits for its head, or its
        // response while it waits for the body.
        let task = tokio::spawn(async move {
            let response = request.await.unwrap();
            assert_eq!(response.version(), reqwest::Version::HTTP_2);
            std::future::pending::<()>().await;
            drop(response);
        });
        let started = until(Duration::from_secs(5), || {
            fake.bodies().get(before).is_some_and(|b| b.pieces >= 5)
        })
        .await;
        assert!(started, "{}: the upstream answer did not start", mode.name);
        task.abort();
        let _ = task.await;
        let left = Instant::now();
        until(Duration::from_secs(3), || {
            fake.bodies().iter().skip(before).all(|b| b.ended.is_some())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let bodies = fake.bodies();
        let first = &bodies[before];
        let cancelled_after = first
            .ended
            .filter(|_| !first.completed)
            .map(|e| e.saturating_duration_since(left));
        let calls_after = bodies
            .iter()
            .skip(before)
            .filter(|b| b.started > left)
            .count();
        eprintln!("{:<22} HTTP/2 {cancelled_after:?} {calls_after}", mode.name);
        if cancelled_after.is_none_or(|d| d > CANCEL_WITHIN) || calls_after > 0 {
            failures.push(format!(
                "{}: {cancelled_after:?}, {calls_after} calls after",
                mode.name
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
