//! `loadgen`: a small HTTP/1.1 load generator for augur's benchmark. Four modes, each
//! printing one JSON object on stdout:
//!
//! - `closed`: N connections, each sending requests back to back for a duration
//!   (throughput; with `--conns 1` the sequential single-connection latency).
//! - `rate`: open-loop fixed request rate over a pool of connections; latency is measured from
//!   the scheduled release time, so queueing for a free connection is not hidden (no
//!   coordinated omission).
//! - `streams`: N concurrent streaming requests; time to first body byte, completion with a
//!   `"done":true` line, and stalls (a gap between body chunks above `--stall-ms`).
//! - `lines`: streaming requests one after another on one connection; per request the time to
//!   the first complete NDJSON or SSE line, and the gaps between consecutive lines, each line
//!   stamped when the read that completes it returns.
//!
//! Every request is bounded by `--request-timeout`; a request that runs out counts as an error
//! and its connection is dropped.
//!
//! One request at a time (`closed --conns 1`, `lines`) takes several `--url`s: the targets
//! then take turns on one connection each, `--slice-ms` of requests at a time, the first turn
//! of each round passing to the next target, until each has had `--duration` seconds. Noise
//! on the machine then falls on every target alike, and the side-by-side figures are
//! comparable. One JSON line per target is printed, in `--url` order.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Parser, Subcommand};
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::Mutex;

#[derive(Parser)]
struct Args {
    /// Target base URL, e.g. http://127.0.0.1:8080 (http only). Repeat it to interleave
    /// targets (`closed --conns 1` and `lines`).
    #[arg(long, global = true, default_values_t = [String::from("http://127.0.0.1:11434")])]
    url: Vec<String>,
    /// With several targets: how long each one's turn of requests lasts, in milliseconds.
    #[arg(long, global = true, default_value_t = 200)]
    slice_ms: u64,
    /// Request path.
    #[arg(long, global = true, default_value = "/api/version")]
    path: String,
    /// POST this JSON body (otherwise GET).
    #[arg(long, global = true)]
    body: Option<String>,
    /// Seconds one request may take (closed, rate and lines modes) before it counts as an
    /// error.
    #[arg(long, global = true, default_value_t = 30.0)]
    request_timeout: f64,
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    Closed {
        #[arg(long, default_value_t = 1)]
        conns: usize,
        #[arg(long, default_value_t = 5.0)]
        duration: f64,
        /// Seconds excluded from the statistics at the start.
        #[arg(long, default_value_t = 0.5)]
        warmup: f64,
    },
    Rate {
        #[arg(long, default_value_t = 1000)]
        rate: u64,
        #[arg(long, default_value_t = 10.0)]
        duration: f64,
        #[arg(long, default_value_t = 32)]
        conns: usize,
        #[arg(long, default_value_t = 0.5)]
        warmup: f64,
    },
    Streams {
        #[arg(long, default_value_t = 1000)]
        streams: usize,
        /// Give up on streams still open after this many seconds.
        #[arg(long, default_value_t = 60.0)]
        timeout: f64,
        #[arg(long, default_value_t = 2000)]
        stall_ms: u64,
        /// Spread connection setup over this many milliseconds.
        #[arg(long, default_value_t = 500)]
        ramp_ms: u64,
    },
    Lines {
        #[arg(long, default_value_t = 5.0)]
        duration: f64,
        /// Seconds excluded from the statistics at the start.
        #[arg(long, default_value_t = 0.5)]
        warmup: f64,
    },
}

struct Target {
    addr: String,
    host: String,
    path: String,
    body: Option<Bytes>,
    timeout: Duration,
}

impl Target {
    fn request(&self) -> hyper::Request<Full<Bytes>> {
        let b = hyper::Request::builder()
            .uri(&self.path)
            .header("host", &self.host);
        let r = match &self.body {
            Some(body) => b
                .method("POST")
                .header("content-type", "application/json")
                .body(Full::new(body.clone())),
            None => b.method("GET").body(Full::new(Bytes::new())),
        };
        r.unwrap_or_else(|e| panic!("bad request: {e}"))
    }
    async fn connect(&self) -> std::io::Result<SendRequest<Full<Bytes>>> {
        let tcp = TcpStream::connect(&self.addr).await?;
        tcp.set_nodelay(true)?;
        let (send, conn) = http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(conn);
        Ok(send)
    }
}

type Conn = SendRequest<Full<Bytes>>;

/// `conn`, ready for a request: (re)connected if it is closed or missing.
async fn ready<'a>(t: &Target, conn: &'a mut Option<Conn>) -> Option<&'a mut Conn> {
    if conn.as_ref().is_none_or(|c| c.is_closed()) {
        *conn = t.connect().await.ok();
    }
    let ok = match conn.as_mut() {
        Some(c) => c.ready().await.is_ok(),
        None => false,
    };
    if !ok {
        *conn = None;
    }
    conn.as_mut()
}

/// One request on `conn`, reconnecting if needed; true on a 2xx with a fully read body within
/// the request timeout.
async fn once(t: &Target, conn: &mut Option<Conn>) -> bool {
    let run = async {
        let c = ready(t, conn).await?;
        let resp = c.send_request(t.request()).await.ok()?;
        let ok = resp.status().is_success();
        Some(ok & resp.into_body().collect().await.is_ok())
    };
    match tokio::time::timeout(t.timeout, run).await {
        Ok(Some(good)) => good,
        _ => {
            *conn = None;
            false
        }
    }
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 120_000_000, 3).unwrap_or_else(|e| panic!("histogram: {e}"))
}

fn pct(h: &Histogram<u64>, prefix: &str) -> String {
    let q = |p: f64| {
        if h.is_empty() {
            0
        } else {
            h.value_at_quantile(p)
        }
    };
    format!(
        r#""{prefix}p50_us":{},"{prefix}p90_us":{},"{prefix}p99_us":{},"{prefix}p999_us":{},"{prefix}max_us":{},"{prefix}mean_us":{:.1}"#,
        q(0.5),
        q(0.9),
        q(0.99),
        q(0.999),
        h.max(),
        h.mean()
    )
}

async fn closed(t: Arc<Target>, conns: usize, duration: f64, warmup: f64) -> String {
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(warmup);
    let end = measure_from + Duration::from_secs_f64(duration);
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            let (mut h, mut ok, mut err) = (hist(), 0u64, 0u64);
            let mut conn = None;
            loop {
                let s = Instant::now();
                if s >= end {
                    break;
                }
                let good = once(&t, &mut conn).await;
                if s >= measure_from {
                    if good {
                        ok += 1;
                        let _ = h.record(s.elapsed().as_micros().max(1) as u64);
                    } else {
                        err += 1;
                    }
                }
            }
            (h, ok, err)
        }));
    }
    let (mut h, mut ok, mut err) = (hist(), 0, 0);
    for task in tasks {
        if let Ok((th, o, e)) = task.await {
            let _ = h.add(th);
            ok += o;
            err += e;
        }
    }
    format!(
        r#"{{"requests":{ok},"errors":{err},"rps":{:.1},{}}}"#,
        ok as f64 / duration,
        pct(&h, "")
    )
}

async fn rate(t: Arc<Target>, rate: u64, duration: f64, conns: usize, warmup: f64) -> String {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let rx = Arc::new(Mutex::new(rx));
    let start = Instant::now() + Duration::from_millis(50);
    let measure_from = start + Duration::from_secs_f64(warmup);
    let total = (rate as f64 * (warmup + duration)) as u64;
    let period = Duration::from_secs_f64(1.0 / rate as f64);
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let (t, rx) = (t.clone(), rx.clone());
        tasks.push(tokio::spawn(async move {
            let (mut h, mut ok, mut err) = (hist(), 0u64, 0u64);
            let mut conn = t.connect().await.ok();
            loop {
                let Some(intended) = rx.lock().await.recv().await else {
                    break;
                };
                let good = once(&t, &mut conn).await;
                if intended >= measure_from {
                    if good {
                        ok += 1;
                        let _ = h.record(intended.elapsed().as_micros().max(1) as u64);
                    } else {
                        err += 1;
                    }
                }
            }
            (h, ok, err)
        }));
    }
    // Requests are stamped when the scheduler releases them (the timer has ~1 ms granularity,
    // so several may be released at once); a busy pool still shows up as latency.
    let mut k = 0u64;
    'ticks: while k < total {
        let now = Instant::now();
        while k < total && start + period * k as u32 <= now {
            if tx.send(now).is_err() {
                break 'ticks;
            }
            k += 1;
        }
        tokio::time::sleep_until((start + period * k as u32).into()).await;
    }
    drop(tx);
    let (mut h, mut ok, mut err) = (hist(), 0, 0);
    for task in tasks {
        if let Ok((th, o, e)) = task.await {
            let _ = h.add(th);
            ok += o;
            err += e;
        }
    }
    let achieved = ok as f64 / duration;
    format!(
        r#"{{"requests":{ok},"errors":{err},"target_rps":{rate},"rps":{achieved:.1},{}}}"#,
        pct(&h, "")
    )
}

struct StreamResult {
    ttfb_us: Option<u64>,
    done: bool,
    max_gap: Duration,
}

async fn one_stream(t: &Target, deadline: Instant) -> std::io::Result<StreamResult> {
    let mut c = t.connect().await?;
    let s = Instant::now();
    let resp = c
        .send_request(t.request())
        .await
        .map_err(std::io::Error::other)?;
    let mut body = resp.into_body();
    let (mut ttfb, mut last, mut max_gap) = (None, Instant::now(), Duration::ZERO);
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let frame = tokio::time::timeout_at(deadline.into(), body.frame()).await;
        let Ok(frame) = frame else {
            return Err(std::io::Error::other("timeout"));
        };
        let Some(frame) = frame else { break };
        let frame = frame.map_err(std::io::Error::other)?;
        if let Ok(data) = frame.into_data() {
            let now = Instant::now();
            if ttfb.is_none() {
                ttfb = Some(now.duration_since(s).as_micros() as u64);
            } else {
                max_gap = max_gap.max(now.duration_since(last));
            }
            last = now;
            tail.extend_from_slice(&data);
            if tail.len() > 4096 {
                tail.drain(..tail.len() - 1024);
            }
        }
    }
    let text = String::from_utf8_lossy(&tail);
    let last_line = text.trim_end().rsplit('\n').next().unwrap_or("");
    Ok(StreamResult {
        ttfb_us: ttfb,
        done: last_line.contains("\"done\":true"),
        max_gap,
    })
}

async fn streams(t: Arc<Target>, n: usize, timeout: f64, stall_ms: u64, ramp_ms: u64) -> String {
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(timeout);
    let mut tasks = Vec::new();
    for i in 0..n {
        let t = t.clone();
        let at = start + Duration::from_micros(ramp_ms * 1000 * i as u64 / n.max(1) as u64);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(at.into()).await;
            one_stream(&t, deadline).await
        }));
    }
    let (mut h, mut done, mut stalled, mut errors, mut max_gap) = (hist(), 0, 0, 0, Duration::ZERO);
    for task in tasks {
        match task.await {
            Ok(Ok(r)) => {
                if let Some(us) = r.ttfb_us {
                    let _ = h.record(us.max(1));
                }
                done += usize::from(r.done);
                stalled += usize::from(r.max_gap > Duration::from_millis(stall_ms));
                max_gap = max_gap.max(r.max_gap);
            }
            _ => errors += 1,
        }
    }
    format!(
        r#"{{"streams":{n},"completed_with_done":{done},"stalled":{stalled},"errors":{errors},"max_gap_ms":{},"wall_s":{:.2},{}}}"#,
        max_gap.as_millis(),
        start.elapsed().as_secs_f64(),
        pct(&h, "ttfb_")
    )
}

/// What one streamed request showed: when its first line came, the gaps between the lines
/// after it, and whether it ended with the protocol's last line.
struct Lines {
    first_us: u64,
    gaps_us: Vec<u64>,
    complete: bool,
}

/// Splits a streamed body into lines as it arrives. A line counts once its newline arrives;
/// blank lines (SSE's event separators) do not count.
#[derive(Default)]
struct LineSplitter {
    /// The line being read has a non-blank byte.
    open: bool,
    /// The last non-blank line, as far as it was kept (its first 512 bytes).
    last: Vec<u8>,
    current: Vec<u8>,
}

impl LineSplitter {
    /// How many lines `data` completes.
    fn feed(&mut self, data: &[u8]) -> usize {
        let mut n = 0;
        for &b in data {
            if b == b'\n' {
                if self.open {
                    n += 1;
                    std::mem::swap(&mut self.last, &mut self.current);
                }
                self.current.clear();
                self.open = false;
            } else {
                self.open |= !b.is_ascii_whitespace();
                if self.current.len() < 512 {
                    self.current.push(b);
                }
            }
        }
        n
    }

    /// The last complete line ends the stream: Ollama's `"done":true` chunk or SSE's
    /// `data: [DONE]`.
    fn ended(&self) -> bool {
        let last = String::from_utf8_lossy(&self.last);
        let last = last.trim();
        last.contains("\"done\":true") || last == "data: [DONE]"
    }
}

/// One streamed request on `conn`, its lines timed from just before the request is sent.
/// `None` on a transport error, a non-2xx status or the request timeout.
async fn timed_lines(t: &Target, conn: &mut Option<Conn>) -> Option<Lines> {
    let run = async {
        let c = ready(t, conn).await?;
        let s = Instant::now();
        let resp = c.send_request(t.request()).await.ok()?;
        if !resp.status().is_success() {
            let _ = resp.into_body().collect().await;
            return None;
        }
        let mut body = resp.into_body();
        let mut split = LineSplitter::default();
        let (mut first, mut last) = (None, s);
        let mut gaps_us = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.ok()?.into_data() else {
                continue;
            };
            let now = Instant::now();
            for _ in 0..split.feed(&data) {
                if first.is_none() {
                    first = Some(now.duration_since(s));
                } else {
                    gaps_us.push(now.duration_since(last).as_micros() as u64);
                }
                last = now;
            }
        }
        Some(Lines {
            first_us: first?.as_micros() as u64,
            gaps_us,
            complete: split.ended(),
        })
    };
    let r = tokio::time::timeout(t.timeout, run).await.ok().flatten();
    if r.is_none() {
        *conn = None;
    }
    r
}

/// One request at a time against one target, stepped by [`Turns`].
trait Probe {
    /// One request on the probe's connection; counted in the statistics when `measure`.
    async fn step(&mut self, t: &Target, measure: bool);
    /// The statistics as one JSON object, over `secs` seconds of measured turns.
    fn report(&self, secs: f64) -> String;
}

/// Whole responses (`closed --conns 1`): latency from just before the request is written to
/// its last body byte.
struct Whole {
    conn: Option<Conn>,
    h: Histogram<u64>,
    ok: u64,
    err: u64,
}

impl Default for Whole {
    fn default() -> Self {
        Self {
            conn: None,
            h: hist(),
            ok: 0,
            err: 0,
        }
    }
}

impl Probe for Whole {
    async fn step(&mut self, t: &Target, measure: bool) {
        let s = Instant::now();
        let good = once(t, &mut self.conn).await;
        if !measure {
            return;
        }
        if good {
            self.ok += 1;
            let _ = self.h.record(s.elapsed().as_micros().max(1) as u64);
        } else {
            self.err += 1;
        }
    }
    fn report(&self, secs: f64) -> String {
        format!(
            r#"{{"requests":{},"errors":{},"rps":{:.1},{}}}"#,
            self.ok,
            self.err,
            self.ok as f64 / secs.max(1e-9),
            pct(&self.h, "")
        )
    }
}

/// Streamed responses (`lines`): the first line and the gaps between lines.
struct Streamed {
    conn: Option<Conn>,
    first: Histogram<u64>,
    gaps: Histogram<u64>,
    ok: u64,
    err: u64,
    incomplete: u64,
    nlines: u64,
}

impl Default for Streamed {
    fn default() -> Self {
        Self {
            conn: None,
            first: hist(),
            gaps: hist(),
            ok: 0,
            err: 0,
            incomplete: 0,
            nlines: 0,
        }
    }
}

impl Probe for Streamed {
    async fn step(&mut self, t: &Target, measure: bool) {
        let r = timed_lines(t, &mut self.conn).await;
        if !measure {
            return;
        }
        let Some(r) = r else {
            self.err += 1;
            return;
        };
        self.ok += 1;
        self.incomplete += u64::from(!r.complete);
        self.nlines += 1 + r.gaps_us.len() as u64;
        let _ = self.first.record(r.first_us.max(1));
        for g in r.gaps_us {
            let _ = self.gaps.record(g.max(1));
        }
    }
    fn report(&self, _secs: f64) -> String {
        format!(
            r#"{{"requests":{},"errors":{},"incomplete":{},"lines_per_request":{:.1},"gaps":{},{},{}}}"#,
            self.ok,
            self.err,
            self.incomplete,
            self.nlines as f64 / self.ok.max(1) as f64,
            self.gaps.len(),
            pct(&self.first, "first_line_"),
            pct(&self.gaps, "gap_")
        )
    }
}

/// Targets taking turns, one request at a time: first `warmup` seconds of unmeasured
/// requests each, then turns of `slice` until each target has had `duration` seconds of
/// measured requests. A request started within a turn runs to its end.
struct Turns {
    duration: Duration,
    warmup: Duration,
    slice: Duration,
}

impl Turns {
    fn new(duration: f64, warmup: f64, slice: Duration) -> Self {
        Self {
            duration: Duration::from_secs_f64(duration),
            warmup: Duration::from_secs_f64(warmup),
            slice: slice.max(Duration::from_millis(1)),
        }
    }

    async fn run<P: Probe>(&self, targets: &[Arc<Target>], mut probes: Vec<P>) -> Vec<String> {
        let n = targets.len();
        for (t, p) in targets.iter().zip(probes.iter_mut()) {
            let end = Instant::now() + self.warmup;
            while Instant::now() < end {
                p.step(t, false).await;
            }
        }
        let mut had = vec![Duration::ZERO; n];
        let mut round = 0;
        while had.iter().any(|h| *h < self.duration) {
            for k in 0..n {
                let i = (round + k) % n;
                if had[i] >= self.duration {
                    continue;
                }
                let start = Instant::now();
                let end = start + self.slice.min(self.duration - had[i]);
                loop {
                    probes[i].step(&targets[i], true).await;
                    if Instant::now() >= end {
                        break;
                    }
                }
                had[i] += start.elapsed();
            }
            round += 1;
        }
        probes
            .iter()
            .zip(had)
            .map(|(p, h)| p.report(h.as_secs_f64()))
            .collect()
    }
}

fn main() {
    let args = Args::parse();
    let timeout = Duration::from_secs_f64(args.request_timeout);
    let targets: Vec<Arc<Target>> = args
        .url
        .iter()
        .map(|url| {
            let hostport = url
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_owned();
            Arc::new(Target {
                addr: hostport.clone(),
                host: hostport,
                path: args.path.clone(),
                body: args.body.clone().map(Bytes::from),
                timeout,
            })
        })
        .collect();
    let one_at_a_time = match args.mode {
        Mode::Closed { conns, .. } => conns == 1,
        Mode::Lines { .. } => true,
        Mode::Rate { .. } | Mode::Streams { .. } => false,
    };
    if targets.len() > 1 && !one_at_a_time {
        eprintln!("loadgen: several --url are taken by closed --conns 1 and lines only");
        std::process::exit(2);
    }
    let slice = Duration::from_millis(args.slice_ms);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let rt = rt.unwrap_or_else(|e| panic!("runtime: {e}"));
    let t = targets[0].clone();
    let out = rt.block_on(async move {
        match args.mode {
            Mode::Closed {
                conns: 1,
                duration,
                warmup,
            } => {
                let probes = targets.iter().map(|_| Whole::default()).collect();
                Turns::new(duration, warmup, slice)
                    .run(&targets, probes)
                    .await
            }
            Mode::Closed {
                conns,
                duration,
                warmup,
            } => vec![closed(t, conns, duration, warmup).await],
            Mode::Rate {
                rate: r,
                duration,
                conns,
                warmup,
            } => vec![rate(t, r, duration, conns, warmup).await],
            Mode::Streams {
                streams: n,
                timeout,
                stall_ms,
                ramp_ms,
            } => vec![streams(t, n, timeout, stall_ms, ramp_ms).await],
            Mode::Lines { duration, warmup } => {
                let probes = targets.iter().map(|_| Streamed::default()).collect();
                Turns::new(duration, warmup, slice)
                    .run(&targets, probes)
                    .await
            }
        }
    });
    for line in out {
        println!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::LineSplitter;

    #[test]
    fn ndjson_lines_count_when_their_newline_arrives() {
        let mut s = LineSplitter::default();
        assert_eq!(s.feed(b"{\"done\":false}\n{\"done\""), 1);
        assert!(!s.ended());
        assert_eq!(s.feed(b":true}"), 0);
        assert_eq!(s.feed(b"\n"), 1);
        assert!(s.ended());
    }

    #[test]
    fn sse_separators_are_not_lines() {
        let mut s = LineSplitter::default();
        assert_eq!(s.feed(b"data: {\"x\":1}\n\ndata: {\"x\":2}\n\n"), 2);
        assert!(!s.ended());
        assert_eq!(s.feed(b"\r\n data: [DONE]\n\n"), 1);
        assert!(s.ended());
    }
}
