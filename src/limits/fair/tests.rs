//! Unit tests of the fair queue: order across principals, weights, waiters
//! that leave, timeouts.

use std::sync::{Arc, Mutex};

use super::*;

fn who(key: &str) -> Waiting<'_> {
    Waiting {
        key,
        label: key,
        weight: 1,
    }
}

/// Queue `keys` (in that order) behind a held slot; release the slot once
/// they all wait, and record the order in which they are served (each
/// holds its slot briefly, then releases it).
async fn served_order(gate: &Arc<Gate>, keys: &[(&'static str, u32)]) -> Vec<&'static str> {
    let held = gate.acquire(who("first"), Duration::ZERO).await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for &(key, weight) in keys {
        let (gate, order) = (gate.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let w = Waiting {
                key,
                label: key,
                weight,
            };
            let slot = gate.acquire(w, Duration::from_secs(5)).await.unwrap();
            order.lock().unwrap().push(key);
            tokio::task::yield_now().await;
            drop(slot);
        }));
        // Let it enqueue before the next one arrives.
        tokio::task::yield_now().await;
    }
    drop(held);
    for t in tasks {
        t.await.unwrap();
    }
    Arc::try_unwrap(order).unwrap().into_inner().unwrap()
}

#[tokio::test]
async fn a_late_principal_is_served_before_an_earlier_burst() {
    let gate = Gate::new(1, "m");
    let mut keys = vec![("a", 1); 10];
    keys.push(("b", 1));
    let order = served_order(&gate, &keys).await;
    assert_eq!(order.len(), 11);
    let b_at = order.iter().position(|k| *k == "b").unwrap();
    assert!(b_at <= 1, "b served at {b_at}: {order:?}");
    assert!(gate.idle());
}

#[tokio::test]
async fn principals_alternate_and_weights_share() {
    let gate = Gate::new(1, "m");
    let keys: Vec<_> = std::iter::repeat_n(("a", 1), 4)
        .chain(std::iter::repeat_n(("b", 1), 4))
        .collect();
    let order = served_order(&gate, &keys).await;
    assert_eq!(order, ["a", "b", "a", "b", "a", "b", "a", "b"]);

    let keys: Vec<_> = std::iter::repeat_n(("heavy", 2), 6)
        .chain(std::iter::repeat_n(("light", 1), 3))
        .collect();
    let order = served_order(&gate, &keys).await;
    let heavy_in_first_six = order[..6].iter().filter(|k| **k == "heavy").count();
    assert_eq!(heavy_in_first_six, 4, "{order:?}");
}

#[tokio::test]
async fn waiters_that_leave_or_time_out_leave_the_queue() {
    let gate = Gate::new(1, "m");
    let held = gate.acquire(who("a"), Duration::ZERO).await.unwrap();
    assert!(gate.acquire(who("b"), Duration::ZERO).await.is_none());
    let start = tokio::time::Instant::now();
    assert!(
        gate.acquire(who("b"), Duration::from_millis(50))
            .await
            .is_none()
    );
    assert!(start.elapsed() >= Duration::from_millis(50));
    // A waiter whose client left (its future dropped).
    let leaving = tokio::spawn({
        let gate = gate.clone();
        async move { gate.acquire(who("c"), Duration::from_secs(30)).await }
    });
    tokio::task::yield_now().await;
    assert_eq!(gate.lock().waiting.len(), 1);
    leaving.abort();
    let _ = leaving.await;
    assert_eq!(gate.lock().waiting.len(), 0);
    assert!(gate.lock().flows.is_empty());
    drop(held);
    assert!(gate.idle());
    // Slots free again are taken at once.
    let a = gate.acquire(who("a"), Duration::ZERO).await;
    assert!(a.is_some());
}

#[tokio::test]
async fn several_slots_are_all_used() {
    let gate = Gate::new(3, "m");
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(gate.acquire(who("a"), Duration::ZERO).await.unwrap());
    }
    assert!(gate.acquire(who("b"), Duration::ZERO).await.is_none());
    let waiting = tokio::spawn({
        let gate = gate.clone();
        async move {
            gate.acquire(who("b"), Duration::from_secs(5))
                .await
                .is_some()
        }
    });
    tokio::task::yield_now().await;
    held.pop();
    assert!(waiting.await.unwrap());
    assert_eq!(gate.lock().in_flight, 2, "the waiter's slot was released");
}
