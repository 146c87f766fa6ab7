//! Streaming: any split of the text gives the same calls and text.

use proptest::prelude::*;

use super::super::{Extracted, TextEvent, TextStream, extract};
use super::set;

/// Feed `text` in pieces cut at `cuts` (byte offsets, snapped to char
/// boundaries) and collect what comes out.
fn streamed(text: &str, cuts: &[usize]) -> (Extracted, Vec<TextEvent>) {
    let mut bounds: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut c = c % (text.len() + 1);
            while !text.is_char_boundary(c) {
                c -= 1;
            }
            c
        })
        .collect();
    bounds.push(0);
    bounds.push(text.len());
    bounds.sort_unstable();
    bounds.dedup();
    let mut stream = TextStream::new(&set());
    let mut events = Vec::new();
    for pair in bounds.windows(2) {
        events.extend(stream.feed(&text[pair[0]..pair[1]]));
    }
    events.extend(stream.finish());
    let mut out = Extracted::default();
    for e in &events {
        match e {
            TextEvent::Text(t) => out.text.push_str(t),
            TextEvent::Calls { calls, .. } => out.calls.extend(calls.iter().cloned()),
            TextEvent::Unparsed { raw, error } => {
                out.text.push_str(raw);
                out.failures.push(error.clone());
            }
        }
    }
    (out, events)
}

const PIECES: &[&str] = &[
    "Sure. ",
    "Let me check the weather.\n",
    "\n\n",
    "  ",
    "[get_weather(city=\"Paris\"), get_time(timezone='CET')]",
    "get_weather(city=\"Lyon\", unit='celsius')\n",
    "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}</tool_call>",
    "<tool_code>{\"tool_name\": \"search\", \"parameters\": {\"query\": \"a]b)c\"}}</tool_code>",
    "[TOOL_REQUEST]{\"name\": \"search\", \"arguments\": {}}[END_TOOL_REQUEST]",
    "```tool_code\nprint(default_api.search(query=\"\"\"x ''' \\\" ] )\"\"\"))\n```",
    "```python\nimport os\n```",
    "```python\nsearch(query='x')\n```",
    "[1, 2, 3] ",
    "<b>bold</b> ",
    "`code` ",
    "get_weather is a tool. ",
    "get_weather(city=Paris)\n",
    "[get_weather(city='x'), nope(a=1)]",
    "<tool_call>{bad json}</tool_call>",
    "<tool_ca",
    "[TOOL_",
    "get_wea",
    "search(query='日本語 😀 é')",
    "é😀\u{2028}",
    "get_weather(city='unterminated",
    "{\"name\": \"get_weather\", \"args\": {\"city\": \"Nice\"}}",
    "[{\"name\": \"get_time\", \"parameters\": {\"timezone\": \"CET\"}}]",
    "{\"name\": \"Bob\"}",
    "{\"name\": \"get_weather\", \"arguments\": {",
    "</tool_call>",
    "\n</tool_",
    "<function=search>\n<parameter=limit>\n3\n</parameter>\n</function>",
    "<tool_call>\n<function=get_time>\n<parameter=timezone>\nUTC\n</parameter>\n",
    "<function=get_",
    "[TOOL_CALLS]get_time[ARGS]{\"timezone\": \"UTC\"}",
    "[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {}}]",
    "[TOOL_CALLS] is a marker. ",
    "<|python_tag|>{\"name\": \"get_time\", \"parameters\": {\"timezone\": \"CET\"}}",
    "<|python_",
];

fn answer() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..8).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_split_gives_the_same_calls_and_text(
        text in answer(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let whole = extract(&text, &set());
        let (split, _) = streamed(&text, &cuts);
        prop_assert_eq!(&split, &whole);
        // Character by character too.
        let every: Vec<usize> = (0..text.len()).collect();
        let (chars, _) = streamed(&text, &every);
        prop_assert_eq!(&chars, &whole);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}", cuts in prop::collection::vec(any::<usize>(), 0..6)) {
        let whole = extract(&text, &set());
        let (split, _) = streamed(&text, &cuts);
        prop_assert_eq!(split, whole);
    }
}

#[test]
fn plain_text_flows_and_only_a_possible_start_is_held() {
    let mut stream = TextStream::new(&set());
    assert_eq!(
        stream.feed("Hello there, "),
        vec![TextEvent::Text("Hello there,".into())]
    );
    // `[` may open a list of calls: held until decided.
    assert_eq!(stream.feed("see ["), vec![TextEvent::Text(" see".into())]);
    assert_eq!(stream.feed("1"), vec![TextEvent::Text(" [1".into())]);
    // At a line start, a name that may grow into a tool's is held.
    assert_eq!(stream.feed("]\nget_"), vec![TextEvent::Text("]".into())]);
    assert_eq!(stream.feed("x"), vec![TextEvent::Text("\nget_x".into())]);
    assert_eq!(stream.finish(), vec![]);
}

#[test]
fn a_call_goes_out_when_its_block_closes() {
    let mut stream = TextStream::new(&set());
    assert_eq!(
        stream.feed("<tool_call>{\"name\": \"get_weather\", "),
        vec![]
    );
    assert_eq!(stream.feed("\"arguments\": {\"city\": \"Paris\"}}"), vec![]);
    let events = stream.feed("</tool_call>\nMore");
    assert!(
        matches!(&events[..], [TextEvent::Calls { calls, raw }, TextEvent::Text(t)] if calls[0].name == "get_weather" && raw.starts_with("<tool_call>") && raw.ends_with("</tool_call>") && t == "More"),
        "{events:?}"
    );
}

#[test]
fn a_long_block_is_given_up_at_the_bound() {
    let mut stream = TextStream::new(&set());
    let mut events = stream.feed("[get_weather(city='");
    let filler = "x".repeat(1000);
    for _ in 0..super::super::MAX_BLOCK / 1000 + 1 {
        events.extend(stream.feed(&filler));
    }
    assert!(
        events.iter().any(|e| matches!(
            e,
            TextEvent::Unparsed {
                error: super::super::TextError::TooLong,
                ..
            }
        )),
        "held text is bounded"
    );
}
