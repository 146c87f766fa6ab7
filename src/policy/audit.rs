//! [`AuditLog`]: JSONL records of tool calls, written off the request path.
//!
//! `record` formats one line and hands it to a writer task over a bounded
//! channel; it never blocks. When the channel is full the record is dropped
//! and counted in `augur_audit_dropped_total`. The file and whether
//! arguments are included come from the request's policy snapshot
//! (`audit: {path, include_arguments}`), so a reload can move or stop the
//! log; the writer reopens when the path changes. Lines look like
//! `{"time":"2026-01-01T00:00:00Z","principal":"ci","model":"gemma3:latest","tool":"get_weather","outcome":"ok","arguments":{…}}`.

use serde_json::{Value, json};
use tokio::{
    io::AsyncWriteExt,
    sync::{mpsc, oneshot},
};

use super::snapshot::AuditPolicy;

const QUEUE: usize = 4096;

enum Msg {
    Line { path: String, line: String },
    Flush(oneshot::Sender<()>),
}

/// Handle to the audit writer task; cheap to clone.
#[derive(Debug, Clone)]
pub struct AuditLog {
    tx: mpsc::Sender<Msg>,
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("audit message")
    }
}

impl AuditLog {
    /// Start the writer task (needs a Tokio runtime). It ends when every
    /// handle is dropped.
    pub fn spawn() -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(writer(rx));
        Self { tx }
    }

    /// Record one tool call if `policy.path` is set. `arguments` are written
    /// only when `policy.include_arguments` is true.
    pub fn record(
        &self,
        policy: &AuditPolicy,
        principal: &str,
        model: &str,
        tool: &str,
        outcome: &str,
        arguments: Option<&Value>,
    ) {
        let Some(path) = &policy.path else { return };
        let time = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let mut rec = json!({
            "time": time,
            "principal": principal,
            "model": model,
            "tool": tool,
            "outcome": outcome,
        });
        if let (true, Some(args), Some(obj)) =
            (policy.include_arguments, arguments, rec.as_object_mut())
        {
            obj.insert("arguments".into(), args.clone());
        }
        // A tool name or argument holding U+2028 would break the line
        // for some readers.
        let line = rec.to_string();
        let escaped = match crate::wire::log_text::json_line(&line) {
            std::borrow::Cow::Owned(escaped) => Some(escaped),
            std::borrow::Cow::Borrowed(_) => None,
        };
        let line = escaped.unwrap_or(line);
        if self
            .tx
            .try_send(Msg::Line {
                path: path.clone(),
                line,
            })
            .is_err()
        {
            metrics::counter!("augur_audit_dropped_total").increment(1);
        }
    }

    /// Wait until every record sent before this call is written.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Msg::Flush(done)).await.is_ok() {
            let _ = wait.await;
        }
    }
}

async fn writer(mut rx: mpsc::Receiver<Msg>) {
    let mut open: Option<(String, tokio::fs::File)> = None;
    while let Some(msg) = rx.recv().await {
        let (path, line) = match msg {
            Msg::Flush(done) => {
                if let Some((_, f)) = &mut open {
                    let _ = f.flush().await;
                }
                let _ = done.send(());
                continue;
            }
            Msg::Line { path, line } => (path, line),
        };
        if open.as_ref().is_none_or(|(p, _)| *p != path) {
            let file = tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .await;
            match file {
                Ok(f) => open = Some((path.clone(), f)),
                Err(e) => {
                    tracing::warn!(error = %e, %path, "cannot open audit log");
                    open = None;
                    continue;
                }
            }
        }
        if let Some((_, f)) = &mut open {
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            if let Err(e) = f.write_all(&bytes).await {
                tracing::warn!(error = %e, %path, "cannot write audit log");
                open = None;
            }
        }
    }
}
