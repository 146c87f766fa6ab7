//! Unit tests of `ending`.

use super::*;

#[test]
fn names_and_indexes_are_pinned() {
    let names: Vec<&str> = Ending::ALL.iter().map(|e| e.as_str()).collect();
    assert_eq!(
        names,
        [
            "complete",
            "refused",
            "error",
            "upstream_cut",
            "timed_out",
            "client_left"
        ]
    );
    for e in Ending::ALL {
        assert_eq!(Ending::from_index(e.index()), Some(e));
    }
    assert_eq!(Ending::from_index(Ending::ALL.len()), None);
}

#[test]
fn what_the_body_did_weighs_against_what_was_reported() {
    use BodyEnd::*;
    use Ending::*;
    let cases = [
        // Plain answers: the status decides.
        (None, Whole, 200, Complete),
        (None, Whole, 404, Error),
        (None, Whole, 500, Error),
        // augur's own error responses.
        (Some(Refused), Whole, 429, Refused),
        (Some(TimedOut), Whole, 504, TimedOut),
        (Some(UpstreamCut), Whole, 502, UpstreamCut),
        // A 200 stream the upstream cut, or that stalled: its error
        // line went out whole.
        (Some(UpstreamCut), Whole, 200, UpstreamCut),
        (Some(TimedOut), Whole, 200, TimedOut),
        // The cut is why the client saw no end, whatever it did next.
        (Some(UpstreamCut), Dropped, 200, UpstreamCut),
        (Some(UpstreamCut), Failed, 200, UpstreamCut),
        // A client that leaves.
        (None, Dropped, 200, ClientLeft),
        (Some(Refused), Dropped, 429, ClientLeft),
        // A body that failed with nothing said of it.
        (None, Failed, 200, Error),
    ];
    for (reported, body, status, ending) in cases {
        assert_eq!(
            decide(reported, body, status),
            ending,
            "{reported:?} {body:?} {status}"
        );
    }
}
