//! Unit tests of `repeats`.

use super::*;
use crate::tools::testutil::call;
use serde_json::json;

#[test]
fn normalized_arguments_are_the_same_call() {
    let answered = [
        call("get_weather", json!({"city": "Paris", "days": 2})),
        call("factorial", json!({"n": 5})),
    ];
    for same in [
        call("get_weather", json!({"days": 2.0, "city": " paris "})),
        call(
            "get_weather",
            json!({"city": "PARIS", "days": "2", "unit": null}),
        ),
        call("factorial", json!({"n": 5})),
    ] {
        assert!(repeats_answered(&same, &answered), "{same:?}");
    }
    for other in [
        call("get_weather", json!({"city": "Paris"})),
        call("get_weather", json!({"city": "Paris", "days": 3})),
        call(
            "get_weather",
            json!({"city": "Paris", "days": 2, "unit": "c"}),
        ),
        call("factorial", json!({"n": [5]})),
        call("get_time", json!({"n": 5})),
    ] {
        assert!(!repeats_answered(&other, &answered), "{other:?}");
    }
    assert!(!repeats_answered(&answered[0], &[]));
}

#[test]
fn nested_values_compare_deeply() {
    let a = call("f", json!({"q": {"tags": ["A", "b"], "n": 1}}));
    let b = call("f", json!({"q": {"n": 1.0, "tags": ["a", "B"]}}));
    let c = call("f", json!({"q": {"n": 1, "tags": ["b", "a"]}}));
    assert!(repeats_answered(&b, std::slice::from_ref(&a)));
    assert!(!repeats_answered(&c, &[a]));
}
