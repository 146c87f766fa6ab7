//! A client on a raw HTTP/1.1 socket that asks, waits until the upstream
//! is generating, and leaves; and what the upstream did after that.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use fake_ollama::FakeOllama;
use serde_json::Value;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use super::{Augur, modes::Mode, until};

/// How soon after the client leaves the upstream request must be gone.
pub(crate) const CANCEL_WITHIN: Duration = Duration::from_millis(100);

/// How a client sends its request and leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leave {
    /// Closes the connection (FIN).
    Close,
    /// Resets the connection (RST).
    Reset,
    /// Sent a CRLF after its body, then closes.
    CloseAfterCrlf,
    /// Pipelined a second request, then closes.
    CloseAfterPipelined,
}

/// A client on a raw socket: the request is written, whatever comes back
/// is collected, and [`Client::leave`] closes the socket.
pub(crate) struct Client {
    received: Arc<Mutex<Vec<u8>>>,
    reader: tokio::task::JoinHandle<tokio::net::tcp::OwnedReadHalf>,
    writer: tokio::net::tcp::OwnedWriteHalf,
    how: Leave,
}

impl Client {
    async fn post(addr: SocketAddr, path: &str, body: &Value, how: Leave) -> Self {
        let stream = TcpStream::connect(addr).await.unwrap();
        let (mut read, mut writer) = stream.into_split();
        let body = serde_json::to_vec(body).unwrap();
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(&body);
        match how {
            Leave::CloseAfterCrlf => request.extend_from_slice(b"\r\n"),
            Leave::CloseAfterPipelined => {
                request.extend_from_slice(b"GET /api/version HTTP/1.1\r\nHost: augur\r\n\r\n");
            }
            Leave::Close | Leave::Reset => {}
        }
        writer.write_all(&request).await.unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = received.clone();
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = read.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
            read
        });
        Self {
            received,
            reader,
            writer,
            how,
        }
    }

    /// Whether the response head has arrived.
    fn has_head(&self) -> bool {
        self.received.lock().unwrap().starts_with(b"HTTP/1.1 ")
    }

    /// Close the connection (everything received was read, so a close is
    /// a FIN); returns when.
    async fn leave(self) -> Instant {
        self.reader.abort();
        let read = self.reader.await.ok();
        let stream = read.map(|r| r.reunite(self.writer).unwrap());
        if let (Leave::Reset, Some(stream)) = (self.how, &stream) {
            #[allow(deprecated)]
            stream.set_linger(Some(Duration::ZERO)).unwrap();
        }
        drop(stream);
        Instant::now()
    }
}

/// What happened upstream after the client left.
#[derive(Debug)]
pub(crate) struct Aftermath {
    /// Whether the client had the response head when it left (shown
    /// with the figures).
    #[allow(dead_code)]
    head: bool,
    /// From the client leaving to the upstream response being dropped.
    cancelled_after: Option<Duration>,
    /// Chunks the upstream produced after the client left.
    pieces_after: u64,
    /// Upstream requests started after the client left.
    calls_after: usize,
}

impl Aftermath {
    fn ok(&self) -> bool {
        self.cancelled_after.is_some_and(|d| d <= CANCEL_WITHIN)
            && self.pieces_after <= 1
            && self.calls_after == 0
    }
}

/// Ask in `mode`, leave once the upstream call numbered `attempt` (0 =
/// the first) has produced a few chunks, and see what the upstream did
/// after that.
pub(crate) async fn leave_mid_answer(
    fake: &FakeOllama,
    augur: &Augur,
    mode: &Mode,
    how: Leave,
    attempt: usize,
) -> Aftermath {
    let before = fake.bodies().len();
    let client = Client::post(augur.addr, mode.path, &mode.body, how).await;
    let at = before + attempt;
    let started = until(Duration::from_secs(10), || {
        fake.bodies().get(at).is_some_and(|b| b.pieces >= 5)
    })
    .await;
    assert!(
        started,
        "{}: upstream call {attempt} did not start",
        mode.name
    );
    let pieces_then = fake.bodies()[at].pieces;
    let head = client.has_head();
    let left = client.leave().await;
    until(Duration::from_secs(3), || {
        fake.bodies().iter().skip(before).all(|b| b.ended.is_some())
    })
    .await;
    // Long enough for a retry to have been sent, had one been.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let bodies = fake.bodies();
    let cut = &bodies[at];
    Aftermath {
        head,
        cancelled_after: cut
            .ended
            .filter(|_| !cut.completed)
            .map(|e| e.saturating_duration_since(left)),
        pieces_after: cut.pieces - pieces_then,
        calls_after: bodies
            .iter()
            .skip(before)
            .filter(|b| b.started > left)
            .count(),
    }
}

/// Leave mid-answer in every mode; the failures, each with its figures.
pub(crate) async fn leave_in_every_mode(
    fake: &FakeOllama,
    augur: &Augur,
    modes: &[Mode],
    how: Leave,
    attempt: usize,
) -> Vec<String> {
    let mut failures = Vec::new();
    for mode in modes {
        let after = leave_mid_answer(fake, augur, mode, how, attempt).await;
        eprintln!("{:<22} {how:?} {after:?}", mode.name);
        if !after.ok() {
            failures.push(format!("{} ({how:?}): {after:?}", mode.name));
        }
    }
    failures
}
