//! Stages 4-5 applied: the body augur sends upstream for a planned
//! request, and what it then expects the model's text to be.

use serde_json::{Map, Value, json};

use crate::{error::ProxyError, format::Format, policy::ToolsMode, schema, tools};

use super::{
    job::{Expect, TextMode},
    plan::{Plan, Route, ToolPlan},
    screen::CallScreen,
};

/// Rewrite the client's body per `plan`; a `format` larger than
/// `format_limit` bytes is refused (400) rather than sent upstream.
pub(crate) fn prepare(
    route: Route,
    client: &Map<String, Value>,
    plan: Plan,
    format_limit: u64,
) -> Result<(Map<String, Value>, Expect), ProxyError> {
    let (body, expect) = rewrite(route, client, plan)?;
    check_format_size(&body, format_limit)?;
    // Text mode's grammar-mode attempt is held to the same limit.
    if let Expect::Tools {
        text: Some(mode), ..
    } = &expect
    {
        check_format_size(&mode.grammar, format_limit)?;
    }
    Ok((body, expect))
}

fn check_format_size(body: &Map<String, Value>, format_limit: u64) -> Result<(), ProxyError> {
    if let Some(format) = body.get("format") {
        let size = crate::wire::json_len(format) as u64;
        if size > format_limit {
            return Err(ProxyError::FormatTooLarge {
                size,
                limit: format_limit,
            });
        }
    }
    Ok(())
}

fn rewrite(
    route: Route,
    client: &Map<String, Value>,
    plan: Plan,
) -> Result<(Map<String, Value>, Expect), ProxyError> {
    let mut body = client.clone();
    body.remove("tool_choice");
    body.remove("parallel_tool_calls");
    let (answer_schema, json_answer) = match &plan.format {
        Some(Format::Schema(s)) => (Some(s.clone()), false),
        Some(Format::Json) => (None, true),
        None => (None, false),
    };
    let grammar_answer = match &answer_schema {
        Some(s) => Some(
            schema::sanitize(s)
                .map_err(|e| ProxyError::BadRequest(format!("invalid format schema: {e}")))?
                .schema,
        ),
        None if json_answer => Some(json!({"type": "object"})),
        None => None,
    };

    if let Some(tp) = plan.tools {
        let answer = (answer_schema, json_answer);
        return Ok(emulate_tools(
            body,
            tp,
            plan.think,
            answer,
            grammar_answer.as_ref(),
        ));
    }

    if plan.strip_tools {
        body.remove("tools");
    }
    if plan.think {
        body.remove("think");
        body.insert(
            "format".into(),
            crate::format::think::think_schema(grammar_answer.as_ref()),
        );
        return Ok((
            body,
            Expect::Think {
                answer_schema,
                json_answer,
            },
        ));
    }
    let expect = match (plan.format, grammar_answer) {
        (Some(Format::Schema(original)), Some(sanitized)) => {
            body.insert("format".into(), sanitized);
            if plan.validate {
                Expect::Schema(original)
            } else {
                Expect::Text
            }
        }
        (Some(Format::Json), _) => {
            body.insert("format".into(), json!("json"));
            if plan.validate {
                Expect::Json
            } else {
                Expect::Text
            }
        }
        _ => {
            body.remove("format");
            Expect::Text
        }
    };
    let _ = route;
    Ok((body, expect))
}

/// The tool emulation's body: the envelope as `format` (in the thinking
/// object with `think`), the instruction in the messages, or text mode's
/// body; and what the answer is then expected to be.
fn emulate_tools(
    mut body: Map<String, Value>,
    tp: ToolPlan,
    think: bool,
    (answer_schema, json_answer): (Option<Value>, bool),
    grammar_answer: Option<&Value>,
) -> (Map<String, Value>, Expect) {
    body.remove("tools");
    body.remove("think");
    let envelope = tools::build_format(&tp.set, &tp.choice, tp.parallel, grammar_answer);
    // With thinking, the envelope is the answer of the thinking object.
    let format = if think {
        crate::format::think::think_schema(Some(&envelope))
    } else {
        envelope
    };
    body.insert("format".into(), format);
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut instruction =
        tools::instruction(&tp.set, &tp.choice, tp.parallel, last_user_text(&messages));
    if think {
        instruction.push_str(crate::format::think::TOOLS_NOTE);
    }
    body.insert(
        "messages".into(),
        Value::Array(tools::rewrite_messages(
            &messages,
            &instruction,
            tp.parallel,
        )),
    );
    // The re-ask of the loop breaker and of calls nobody asked for:
    // the answer branch alone.
    let answer_format = tp
        .choice
        .allows_answer()
        .then(|| answer_only(&tp, think, grammar_answer));
    // A first question that shares no word with any tool and offers
    // no value: any call would be one nobody asked for, withheld and
    // re-asked for an answer (see `screen`), so the answer is
    // asked for at once.
    let direct = match &answer_format {
        // Not under `small_model: auto`: no answer is scored yet.
        Some(answer) if tp.answer_unrelated && !tp.gated && nobody_asks(&tp.set, &messages) => {
            body.insert("format".into(), answer.clone());
            tracing::debug!("no tool relates to the question: asking for an answer");
            true
        }
        _ => false,
    };
    // Text mode, for an answer that is text: no format, the model's
    // own call form; the grammar-mode body is kept for an answer that
    // cannot be read.
    let text_mode =
        tp.mode == ToolsMode::Text && !direct && !think && answer_schema.is_none() && !json_answer;
    let (body, text) = if text_mode {
        let (text_body, mode) = text_mode_body(body, &tp, &messages);
        (text_body, Some(mode))
    } else {
        (body, None)
    };
    let reask_format = answer_format.clone().filter(|_| tp.loop_breaker);
    let question = tp
        .answer_unrelated
        .then(|| last_user_text(&messages).to_string());
    let mut screen = CallScreen::new(messages, tp.drop_ungrounded, reask_format).gated(tp.gated);
    if let Some(question) = question {
        screen = screen.answering_unrelated(&question, answer_format);
    }
    let expect = Expect::Tools {
        set: tp.set,
        answer_schema: answer_schema.or(json_answer.then(|| json!({"type": "object"}))),
        json_answer,
        think,
        screen: std::sync::Arc::new(screen),
        text,
    };
    (body, expect)
}

/// The envelope's answer branch alone (in the thinking object with
/// `think`): the re-ask of the loop breaker and of calls nobody asked for.
fn answer_only(tp: &ToolPlan, think: bool, grammar_answer: Option<&Value>) -> Value {
    let answer = tools::build_format(
        &tp.set,
        &tools::ToolChoice::None,
        tp.parallel,
        grammar_answer,
    );
    if think {
        crate::format::think::think_schema(Some(&answer))
    } else {
        answer
    }
}

/// Text mode's body: no format, the model's own call form; the
/// grammar-mode `body` is kept for an answer that cannot be read.
fn text_mode_body(
    body: Map<String, Value>,
    tp: &ToolPlan,
    messages: &[Value],
) -> (Map<String, Value>, TextMode) {
    let mut text_body = body.clone();
    text_body.remove("format");
    let instruction = tools::text::instruction(
        &tp.set,
        &tp.choice,
        tp.parallel,
        tp.text_format,
        last_user_text(messages),
    );
    let style = tools::CallStyle::Text(tp.text_format);
    text_body.insert(
        "messages".into(),
        Value::Array(tools::rewrite_messages_as(messages, &instruction, style)),
    );
    let mode = TextMode {
        choice: tp.choice.clone(),
        grammar: body,
    };
    (text_body, mode)
}

/// Whether `messages` are a first question (system messages and user
/// messages only, the user's last) sharing no word with any tool of `set`
/// and offering no value a call could take.
fn nobody_asks(set: &tools::ToolSet, messages: &[Value]) -> bool {
    fn role(m: &Value) -> &str {
        m.get("role").and_then(Value::as_str).unwrap_or_default()
    }
    let first_question = messages.last().is_some_and(|m| role(m) == "user")
        && messages
            .iter()
            .all(|m| matches!(role(m), "system" | "user"));
    let question = last_user_text(messages);
    first_question
        && set
            .tools()
            .iter()
            .all(|tool| tools::relevance::unrelated(tool, question))
        && !tools::offers::offers_values(set.tools(), question)
}

/// The text of the latest user message (empty when there is none).
fn last_user_text(messages: &[Value]) -> &str {
    messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}
