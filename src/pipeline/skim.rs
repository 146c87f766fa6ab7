//! A first look at a native generation request without building its JSON:
//! the model, and whether any field augur may act on is there at all
//! (`format`, `tools`, `think`). Most requests carry none of them; those
//! are forwarded as they came, without a full parse of what can be a long
//! conversation.

use std::borrow::Cow;

use serde::{Deserialize, de::IgnoredAny};

/// The fields that decide whether a request needs a plan. `null` counts
/// as absent, as it does for Ollama.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    format: Option<IgnoredAny>,
    #[serde(default)]
    tools: Option<IgnoredAny>,
    #[serde(default)]
    think: Option<IgnoredAny>,
}

/// What a skim found.
#[derive(Debug, PartialEq, Eq)]
pub enum Skim {
    /// A JSON object with none of the fields augur acts on; its model,
    /// when one is named.
    Plain { model: Option<String> },
    /// Anything else: the body has to be parsed in full.
    NeedsParse,
}

/// Skim `bytes`.
pub fn skim(bytes: &[u8]) -> Skim {
    // A derived struct would also accept a JSON array.
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        return Skim::NeedsParse;
    }
    match serde_json::from_slice::<Fields>(bytes) {
        Ok(f) if f.format.is_none() && f.tools.is_none() && f.think.is_none() => Skim::Plain {
            model: f.model.filter(|m| !m.is_empty()).map(Cow::into_owned),
        },
        _ => Skim::NeedsParse,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(model: Option<&str>) -> Skim {
        Skim::Plain {
            model: model.map(str::to_string),
        }
    }

    #[test]
    fn a_plain_chat_needs_no_parse() {
        let body = br#"{"model":"gemma3","messages":[{"role":"user","content":"hi \"there\""}],"stream":false,"options":{"temperature":0}}"#;
        assert_eq!(skim(body), plain(Some("gemma3")));
        assert_eq!(skim(br#" {"prompt":"x","format":null}"#), plain(None));
        assert_eq!(skim(br#"{"model":""}"#), plain(None));
        assert_eq!(skim(br#"{"model":"a\u0062c"}"#), plain(Some("abc")));
    }

    #[test]
    fn fields_augur_acts_on_need_a_parse() {
        for body in [
            r#"{"model":"m","format":"json"}"#,
            r#"{"model":"m","format":{"type":"object"}}"#,
            r#"{"model":"m","tools":[]}"#,
            r#"{"model":"m","think":false}"#,
        ] {
            assert_eq!(skim(body.as_bytes()), Skim::NeedsParse, "{body}");
        }
    }

    #[test]
    fn what_is_not_a_plain_object_needs_a_parse() {
        for body in [
            "",
            "[\"m\"]",
            "{\"model\":\"m\"",
            "{\"model\":1}",
            "{\"model\":\"a\",\"model\":\"b\"}",
            "null",
        ] {
            assert_eq!(skim(body.as_bytes()), Skim::NeedsParse, "{body}");
        }
    }
}
