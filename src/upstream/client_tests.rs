//! Unit tests of `client`.

use super::*;

#[test]
fn upstream_uris_keep_a_path_prefix() {
    let up = Upstream::new(
        "http://127.0.0.1:1/ollama".parse().unwrap(),
        Duration::from_secs(1),
        Duration::from_secs(1),
        Duration::from_secs(1),
    )
    .unwrap();
    let uri: Uri = "/api/tags?x=1".parse().unwrap();
    assert_eq!(
        up.origin_form(&uri).unwrap().to_string(),
        "/ollama/api/tags?x=1"
    );
    let root = Upstream::new(
        "http://127.0.0.1:1".parse().unwrap(),
        Duration::from_secs(1),
        Duration::from_secs(1),
        Duration::from_secs(1),
    )
    .unwrap();
    assert_eq!(root.origin_form(&uri).unwrap().to_string(), "/api/tags?x=1");
}
