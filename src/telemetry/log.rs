//! The log output on stderr, text or JSON, one line per event, whatever
//! the values in it.
//!
//! Log values hold what clients and models wrote (model names, paths,
//! tool names, argument keys, error messages quoting them). In the text
//! format every field value and message is written with its control
//! characters, and the line and paragraph separators, escaped (`\n`,
//! `\u{1b}`), so no value can end the line and start one that reads like
//! augur's own; the JSON format escapes the ones `serde_json` leaves
//! (U+0085, U+2028, U+2029: line breaks to some readers); see
//! [`crate::wire::log_text`]. In both, the userinfo of any URL
//! (`http://user:secret@collector:4318`) is written `***`, whoever wrote
//! the line (augur, or a library's error message).

use std::{fmt, io};

use tracing::field::Field;
use tracing_subscriber::{
    EnvFilter, Layer,
    field::RecordFields,
    fmt::{FormatFields, MakeWriter, format::Writer},
    registry::LookupSpan,
};

use crate::{
    config::LogFormat,
    wire::{
        log_text::{escaped, json_line},
        redact::redact_urls,
    },
};

/// The log layer: `format` lines of the events `filter` lets through, on
/// stderr.
pub fn layer<S>(format: LogFormat, filter: EnvFilter) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    let json = format == LogFormat::Json;
    // Colours only for a terminal, and not when NO_COLOR is set
    // (https://no-color.org): a log file holds no escape codes.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(Stderr { json })
        .with_ansi(colour);
    match format {
        LogFormat::Json => fmt.json().with_filter(filter).boxed(),
        LogFormat::Text => fmt.fmt_fields(TextFields).with_filter(filter).boxed(),
    }
}

/// The fields of a text line (and of a span's context): the message,
/// then `name=value` for each other field, space-separated, every value
/// escaped.
struct TextFields;

impl<'writer> FormatFields<'writer> for TextFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut v = TextVisitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut v);
        v.result
    }
}

struct TextVisitor<'writer> {
    writer: Writer<'writer>,
    first: bool,
    result: fmt::Result,
}

impl TextVisitor<'_> {
    fn write(&mut self, name: &str, text: &str) {
        if self.result.is_err() || name.starts_with("log.") {
            return;
        }
        let sep = if self.first { "" } else { " " };
        self.first = false;
        let text = escaped(text);
        self.result = match name {
            "message" => write!(self.writer, "{sep}{text}"),
            name => write!(
                self.writer,
                "{sep}{}={text}",
                name.strip_prefix("r#").unwrap_or(name)
            ),
        };
    }
}

impl tracing::field::Visit for TextVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.write("message", value);
        } else {
            self.write(field.name(), &format!("{value:?}"));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.write(field.name(), &format!("{value:?}"));
    }
}

/// Stderr, each line (the layer writes one per event, whole) with URL
/// credentials hidden, and JSON's raw separators escaped.
#[derive(Clone, Copy)]
struct Stderr {
    json: bool,
}

impl<'a> MakeWriter<'a> for Stderr {
    type Writer = Stderr;

    fn make_writer(&'a self) -> Self::Writer {
        *self
    }
}

impl io::Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let Ok(line) = std::str::from_utf8(buf) else {
            return io::stderr().write(buf);
        };
        let redacted = redact_urls(line);
        let out = if self.json {
            json_line(&redacted)
        } else {
            std::borrow::Cow::Borrowed(&*redacted)
        };
        io::stderr().write_all(out.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}
