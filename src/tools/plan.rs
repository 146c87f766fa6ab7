//! [`Emulation`]: the per-request bundle of everything the free functions
//! need (tools, choice, parallel flag, client `format`), so the HTTP layer
//! holds one value from request rewriting to response synthesis.

use serde_json::Value;

use super::parse::{ModelOutput, ParseError, answer_content, parse_output};
use super::{
    StreamExtractor, ToolChoice, ToolError, ToolSet, answer_is_structured, build_format,
    instruction, rewrite_messages,
};

/// How one request is emulated.
#[derive(Debug, Clone)]
pub struct Emulation {
    pub set: ToolSet,
    pub choice: ToolChoice,
    /// Allow several calls per reply (`tool_calls` array, bounded).
    pub parallel: bool,
    /// The client's own `format`, if any (becomes the answer schema).
    pub answer_schema: Option<Value>,
}

impl Emulation {
    /// From a request's `tools`, `tool_choice`, parallel flag and `format`.
    /// `Ok(None)` when there is nothing to emulate (no tools, or
    /// `tool_choice: "none"`): forward without `tools`. Tools and choice are
    /// checked either way, so a malformed request is a 400 regardless.
    pub fn from_request(
        tools: &[Value],
        tool_choice: Option<&Value>,
        parallel: bool,
        format: Option<&Value>,
    ) -> Result<Option<Emulation>, ToolError> {
        let set = ToolSet::from_request(tools)?;
        let choice = ToolChoice::from_request(tool_choice, &set)?;
        if set.is_empty() || !choice.emulates() {
            return Ok(None);
        }
        let answer_schema = format.filter(|f| !f.is_null()).cloned();
        Ok(Some(Emulation {
            set,
            choice,
            parallel,
            answer_schema,
        }))
    }

    /// The `format` to send upstream ([`build_format`]).
    pub fn format(&self) -> Value {
        build_format(
            &self.set,
            &self.choice,
            self.parallel,
            self.answer_schema.as_ref(),
        )
    }

    /// The instruction text ([`instruction`]).
    pub fn instruction(&self) -> String {
        instruction(&self.set, &self.choice, self.parallel)
    }

    /// The messages to send upstream ([`rewrite_messages`] with
    /// [`Emulation::instruction`]).
    pub fn messages(&self, messages: &[Value]) -> Vec<Value> {
        rewrite_messages(messages, &self.instruction(), self.parallel)
    }

    /// True when the answer is JSON rather than text.
    pub fn structured_answer(&self) -> bool {
        answer_is_structured(self.answer_schema.as_ref())
    }

    /// Parse a complete output ([`parse_output`]).
    pub fn parse(&self, text: &str) -> Result<ModelOutput, ParseError> {
        parse_output(text, &self.set)
    }

    /// A stream extractor for this request.
    pub fn extractor(&self) -> StreamExtractor {
        StreamExtractor::new(&self.set, self.structured_answer())
    }

    /// An answer as `message.content` ([`answer_content`]).
    pub fn answer_content(&self, answer: &Value) -> String {
        answer_content(answer, self.structured_answer())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testutil::weather_tool;
    use crate::tools::{StreamEvent, ollama_tool_calls, validate_calls};
    use serde_json::json;

    #[test]
    fn none_and_empty_are_not_emulated_but_still_checked() {
        let tools = [weather_tool()];
        assert!(
            Emulation::from_request(&tools, Some(&json!("none")), false, None)
                .unwrap()
                .is_none()
        );
        assert!(
            Emulation::from_request(&[], None, false, None)
                .unwrap()
                .is_none()
        );
        assert!(Emulation::from_request(&[json!(1)], Some(&json!("none")), false, None).is_err());
        assert!(
            Emulation::from_request(
                &tools,
                Some(&json!({"type":"function","function":{"name":"x"}})),
                false,
                None
            )
            .is_err()
        );
    }

    #[test]
    fn end_to_end_call_round_trip() {
        let e = Emulation::from_request(&[weather_tool()], None, false, Some(&Value::Null))
            .unwrap()
            .unwrap();
        assert!(!e.structured_answer());
        let format = e.format();
        let messages = e.messages(&[json!({"role":"user","content":"Weather in Tokyo?"})]);
        assert_eq!(messages.len(), 2);
        assert!(
            messages[0]["content"]
                .as_str()
                .unwrap()
                .contains("get_weather")
        );
        let output = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Tokyo"}}}"#;
        let instance: Value = serde_json::from_str(output).unwrap();
        assert!(jsonschema::is_valid(&format, &instance));
        let ModelOutput::Calls(calls) = e.parse(output).unwrap() else {
            panic!("expected calls")
        };
        assert!(validate_calls(&calls, &e.set).iter().all(Vec::is_empty));
        let mut x = e.extractor();
        let mut events = x.feed(&output[..20]);
        events.extend(x.feed(&output[20..]));
        events.extend(x.finish().unwrap());
        assert_eq!(events, vec![StreamEvent::Call(calls[0].clone())]);
        let wire = ollama_tool_calls(&calls, 0);
        assert_eq!(wire[0]["function"]["arguments"], json!({"city":"Tokyo"}));
        // The call, replayed as history, comes back as the same envelope.
        let history = e.messages(&[
            json!({"role":"user","content":"Weather in Tokyo?"}),
            json!({"role":"assistant","content":"","tool_calls":wire}),
            json!({"role":"tool","tool_call_id":wire[0]["id"],"content":"sunny"}),
        ]);
        assert_eq!(history[2]["content"], json!(output));
        assert_eq!(
            history[3]["content"],
            json!("Tool result for get_weather: sunny")
        );
    }

    #[test]
    fn end_to_end_structured_answer() {
        let format =
            json!({"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]});
        let e =
            Emulation::from_request(&[weather_tool()], Some(&json!("auto")), true, Some(&format))
                .unwrap()
                .unwrap();
        assert!(e.structured_answer());
        let output = r#"{"response":{"temp":21.5}}"#;
        assert!(jsonschema::is_valid(
            &e.format(),
            &serde_json::from_str(output).unwrap()
        ));
        let ModelOutput::Answer(a) = e.parse(output).unwrap() else {
            panic!("expected an answer")
        };
        assert_eq!(e.answer_content(&a), r#"{"temp":21.5}"#);
        let mut x = e.extractor();
        let events = x.feed(output);
        assert_eq!(
            events,
            vec![StreamEvent::AnswerDelta(r#"{"temp":21.5}"#.into())]
        );
    }
}
