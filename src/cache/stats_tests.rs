//! Unit tests of `stats`.

use super::*;

#[test]
fn counts_are_kept_per_principal_within_a_bound() {
    let s = Stats::default();
    s.count("alice", Lookup::Hit);
    s.count("alice", Lookup::Miss);
    s.count("anonymous", Lookup::Bypass);
    for i in 0..MAX_PRINCIPALS {
        s.count(&format!("k{i}"), Lookup::Hit);
    }
    let rows = s.json();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), MAX_PRINCIPALS + 1);
    assert_eq!(
        rows[0],
        json!({"principal": "alice", "hit": 1, "miss": 1, "bypass": 0})
    );
    let other = rows.iter().find(|r| r["principal"] == "other").unwrap();
    assert_eq!(other["hit"], 2);
}
