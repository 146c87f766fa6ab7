//! Unit tests of `events`.

use super::*;

#[test]
fn the_ring_keeps_the_newest_within_its_capacity() {
    let events = Events::default();
    for i in 0..CAPACITY + 25 {
        events.record(Kind::Refusal, &i.to_string(), "p", "m", "429 rate limited");
    }
    let recent = events.recent();
    assert_eq!(recent.len(), CAPACITY);
    assert_eq!(recent[0].request_id, (CAPACITY + 24).to_string());
    assert_eq!(recent[CAPACITY - 1].request_id, "25");
    assert_eq!(events.totals_json()["refusals"], (CAPACITY + 25) as u64);
}

#[test]
fn requests_are_counted_by_how_they_ended() {
    let events = Events::default();
    events.request_ended(Ending::Complete);
    events.request_ended(Ending::UpstreamCut);
    events.request_ended(Ending::UpstreamCut);
    let totals = events.totals_json();
    assert_eq!(totals["requests"], 3);
    assert_eq!(totals["endings"]["complete"], 1);
    assert_eq!(totals["endings"]["upstream_cut"], 2);
    assert_eq!(totals["endings"]["client_left"], 0);
    assert_eq!(
        totals["endings"].as_object().unwrap().len(),
        Ending::ALL.len()
    );
}

#[test]
fn strings_are_cut() {
    let events = Events::default();
    let long = "é".repeat(1000);
    events.record(Kind::Repair, &long, &long, &long, &long);
    let e = &events.recent()[0];
    assert_eq!(e.request_id.chars().count(), MAX_NAME + 1);
    assert_eq!(e.detail.chars().count(), MAX_DETAIL + 1);
}

#[test]
fn responses_are_classified_by_status_and_report_headers() {
    let mut h = HeaderMap::new();
    assert!(classify(StatusCode::OK, &h).is_empty());
    h.insert("x-augur-repaired", "trailing_comma".parse().unwrap());
    h.insert("x-augur-attempts", "2".parse().unwrap());
    h.insert("x-augur-fallback", "invalid".parse().unwrap());
    h.insert("x-augur-model", "big:latest".parse().unwrap());
    let kinds: Vec<Kind> = classify(StatusCode::OK, &h)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(kinds, [Kind::Repair, Kind::Retry, Kind::Fallback]);
    let refused = classify(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new());
    assert_eq!(refused, [(Kind::Refusal, "429 rate limited".to_string())]);
}
