//! Purpose-built upstreams for the connection tests: plain HTTP/1.1
//! servers written by hand (no hyper, no augur code), each answering any
//! request with one small Ollama chat answer, and each treating its
//! connections between requests in its own way, as servers and load
//! balancers in front of Ollama do.

use std::{
    io::{Read, Write},
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

/// The answer to every request.
pub(super) const ANSWER: &str = r#"{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"ok"},"done":true,"done_reason":"stop"}"#;

/// Longest request head the servers read.
const MAX_HEAD: usize = 64 * 1024;

/// What an upstream does with a connection between two requests.
#[derive(Debug, Clone, Copy)]
pub(super) enum Between {
    /// Closes it (FIN) once it has been idle this long, as a server with a
    /// keep-alive timeout does.
    IdleClose(Duration),
    /// Resets it (RST) once it has been idle this long, as a load balancer
    /// that forgets idle flows does.
    IdleReset(Duration),
    /// Forgets a connection idle this long without a word, and resets it
    /// when a request arrives on it: a load balancer or NAT that drops idle
    /// flows, or a server that never accepted a connection the kernel
    /// completed (a full listen backlog).
    Forget(Duration),
    /// Does with request `n` of connection `c` (both counted from 0) what
    /// `script(c, n)` says.
    Scripted(fn(usize, usize) -> Act),
    /// After an answer, one time in `one_in`, closes it within a few
    /// milliseconds, whether or not the next request has arrived (a
    /// request left unread makes the close a reset).
    Random { one_in: u64 },
}

/// What a scripted upstream does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Act {
    Answer,
    /// Closes the connection without a word, the request read.
    Drop,
    /// Writes the first bytes of an answer's head, then closes.
    Cut,
}

/// What an upstream saw.
#[derive(Default)]
pub(super) struct Seen {
    /// Connections accepted.
    pub(super) accepted: AtomicUsize,
    /// Requests read whole.
    pub(super) received: AtomicUsize,
    /// Requests answered.
    pub(super) answered: AtomicUsize,
    /// Connections closed with a request (or part of one) unanswered.
    pub(super) dropped: AtomicUsize,
    /// Connections open now, and the most open at once.
    pub(super) open: AtomicUsize,
    pub(super) peak: AtomicUsize,
}

impl Seen {
    pub(super) fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    pub(super) fn received(&self) -> usize {
        self.received.load(Ordering::SeqCst)
    }

    pub(super) fn answered(&self) -> usize {
        self.answered.load(Ordering::SeqCst)
    }

    pub(super) fn dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }

    pub(super) fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// A connection accepted; its number, from 0.
    fn opened(&self) -> usize {
        let n = self.accepted.fetch_add(1, Ordering::SeqCst);
        let open = self.open.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(open, Ordering::SeqCst);
        n
    }

    fn closed(&self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A running upstream.
pub(super) struct Upstream {
    pub(super) url: String,
    pub(super) seen: Arc<Seen>,
}

/// An upstream on this runtime that treats idle connections as `between`
/// says.
pub(super) async fn start(between: Between) -> Upstream {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let counts = seen.clone();
    // A fixed seed: the "random" closes are the same on every run.
    let rng = Arc::new(Mutex::new(0x2545_f491_4f6c_dd1d_u64));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let c = counts.opened();
            let (counts, rng) = (counts.clone(), rng.clone());
            tokio::spawn(async move {
                serve(stream, c, between, &counts, &rng).await;
                counts.closed();
            });
        }
    });
    Upstream { url, seen }
}

/// Next number of a xorshift sequence.
fn next(rng: &Mutex<u64>) -> u64 {
    let mut x = rng.lock().unwrap();
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

async fn serve(mut stream: TcpStream, c: usize, between: Between, seen: &Seen, rng: &Mutex<u64>) {
    let mut buf = Vec::new();
    for n in 0.. {
        let idle = match between {
            Between::IdleClose(d) | Between::IdleReset(d) | Between::Forget(d) => Some(d),
            Between::Random { .. } | Between::Scripted(_) => None,
        };
        let request = read_request(&mut stream, &mut buf);
        let request = match idle {
            Some(d) => match tokio::time::timeout(d, request).await {
                Ok(r) => r,
                Err(_) => {
                    if let Between::Forget(_) = between {
                        forgotten(stream, seen).await;
                    } else if let Between::IdleReset(_) = between {
                        let _ = stream.set_zero_linger();
                    }
                    return;
                }
            },
            None => request.await,
        };
        if request.is_none() {
            if !buf.is_empty() {
                seen.dropped.fetch_add(1, Ordering::SeqCst);
            }
            return;
        }
        seen.received.fetch_add(1, Ordering::SeqCst);
        match between {
            Between::Scripted(script) if script(c, n) == Act::Drop => return,
            Between::Scripted(script) if script(c, n) == Act::Cut => {
                let _ = stream.write_all(b"HTTP/1.1 200").await;
                return;
            }
            _ => {}
        }
        if stream.write_all(response().as_bytes()).await.is_err() {
            return;
        }
        seen.answered.fetch_add(1, Ordering::SeqCst);
        if let Between::Random { one_in } = between
            && next(rng).is_multiple_of(one_in)
        {
            tokio::time::sleep(Duration::from_micros(next(rng) % 3000)).await;
            // Closed without reading what came meanwhile: a reset when a
            // request did.
            let Ok(std) = stream.into_std() else { return };
            let mut probe = [0u8; 1];
            let _ = std.set_nonblocking(true);
            if !buf.is_empty() || std.peek(&mut probe).is_ok_and(|n| n > 0) {
                seen.dropped.fetch_add(1, Ordering::SeqCst);
            }
            return;
        }
    }
}

/// Wait for the next bytes on a forgotten connection and reset it.
async fn forgotten(stream: TcpStream, seen: &Seen) {
    let _ = stream.readable().await;
    let mut probe = [0u8; 1];
    if stream.peek(&mut probe).await.is_ok_and(|n| n > 0) {
        seen.dropped.fetch_add(1, Ordering::SeqCst);
    }
    let _ = stream.set_zero_linger();
}

fn response() -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n{ANSWER}",
        ANSWER.len()
    )
}

/// Where the head ends in `buf`, and the body length it announces.
fn head(buf: &[u8]) -> Option<(usize, usize)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let text = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let length = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    Some((end, length))
}

/// Read one whole request from `stream` (bytes of the next one stay in
/// `buf`); `None` when the client closed or sent too much.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<()> {
    let mut chunk = [0u8; 8192];
    loop {
        if let Some((end, length)) = head(buf)
            && buf.len() >= end + length
        {
            buf.drain(..end + length);
            return Some(());
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// An upstream that serves each connection on a thread of its own, as
/// Python's `ThreadingHTTPServer` does (listen backlog 5), keeping
/// connections alive until the client closes them. Called on a runtime
/// (its listener is made there, then served by blocking threads).
pub(super) fn threaded() -> Upstream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let listener = socket.listen(5).unwrap().into_std().unwrap();
    listener.set_nonblocking(false).unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let counts = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            counts.opened();
            let counts = counts.clone();
            std::thread::spawn(move || {
                serve_blocking(stream, &counts);
                counts.closed();
            });
        }
    });
    Upstream {
        url: format!("http://{addr}"),
        seen,
    }
}

fn serve_blocking(mut stream: std::net::TcpStream, seen: &Seen) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some((end, length)) = head(&buf)
            && buf.len() >= end + length
        {
            buf.drain(..end + length);
            if stream.write_all(response().as_bytes()).is_err() {
                return;
            }
            seen.answered.fetch_add(1, Ordering::SeqCst);
            continue;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > MAX_HEAD {
            return;
        }
    }
}
