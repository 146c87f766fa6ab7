//! Unit tests of `usage`.

use super::*;

#[test]
fn counts_come_from_the_done_chunk_or_usage() {
    let c = |input, output, eval_ns| {
        Some(Counts {
            input,
            output,
            eval_ns,
        })
    };
    let done = br#"{"done":true,"prompt_eval_count":26,"prompt_eval_duration":3,"eval_count":282,"eval_duration":4}"#;
    assert_eq!(counts_in(done), c(26, 282, Some(4)));
    let usage = br#"{"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}"#;
    assert_eq!(counts_in(usage), c(5, 7, None));
    let anthropic = br#"{"usage":{"input_tokens":3,"output_tokens":4}}"#;
    assert_eq!(counts_in(anthropic), c(3, 4, None));
    assert_eq!(counts_in(b"{}"), None);
    assert_eq!(counts_in(br#"{"eval_count":0}"#), c(0, 0, None));
    // Spaces after the colon, the last report wins, bytes that are not
    // UTF-8 around it, and a key with no digits.
    let spaced = b"\xff{\"eval_count\": 3}\n{\"prompt_eval_count\" :1,\"eval_count\":  12 }";
    assert_eq!(counts_in(spaced), c(0, 12, None));
    assert_eq!(counts_in(br#"{"eval_count":"x"}"#), None);
    assert_eq!(counts_in(br#"{"eval_count":"#), None);
}

#[test]
fn reports_add_up_over_retries() {
    let u = Usage::for_body(101);
    assert_eq!(u.prompt_estimate(), 26);
    assert_eq!(u.reported(), None);
    let c = |input, output| Counts {
        input,
        output,
        eval_ns: Some(1),
    };
    u.report(c(4, 6));
    u.report(c(5, 10));
    assert_eq!(u.reported(), Some(25));
    assert_eq!(
        u.counts(),
        Some(Counts {
            input: 9,
            output: 16,
            eval_ns: Some(2)
        })
    );
}
