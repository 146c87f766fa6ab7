//! `loadgen`: a small HTTP/1.1 load generator for augur's benchmark. Three modes, each
//! printing one JSON object on stdout:
//!
//! - `closed`: N connections, each sending requests back to back for a duration
//!   (throughput; with `--conns 1` the sequential single-connection latency).
//! - `rate`: open-loop fixed request rate over a pool of connections; latency is measured from
//!   the scheduled release time, so queueing for a free connection is not hidden (no
//!   coordinated omission).
//! - `streams`: N concurrent streaming requests; time to first body byte, completion with a
//!   `"done":true` line, and stalls (a gap between body chunks above `--stall-ms`).

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
    /// Target base URL, e.g. http://127.0.0.1:8080 (http only).
    #[arg(long, global = true, default_value = "http://127.0.0.1:11434")]
    url: String,
    /// Request path.
    #[arg(long, global = true, default_value = "/api/version")]
    path: String,
    /// POST this JSON body (otherwise GET).
    #[arg(long, global = true)]
    body: Option<String>,
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
}

struct Target {
    addr: String,
    host: String,
    path: String,
    body: Option<Bytes>,
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

/// One request on `conn`, reconnecting if needed; true on a 2xx with a fully read body.
async fn once(t: &Target, conn: &mut Option<SendRequest<Full<Bytes>>>) -> bool {
    if conn.as_ref().is_none_or(|c| c.is_closed()) {
        *conn = t.connect().await.ok();
    }
    let Some(c) = conn.as_mut() else { return false };
    if c.ready().await.is_err() {
        *conn = None;
        return false;
    }
    match c.send_request(t.request()).await {
        Ok(resp) => {
            let ok = resp.status().is_success();
            ok & resp.into_body().collect().await.is_ok()
        }
        Err(_) => {
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

fn main() {
    let args = Args::parse();
    let hostport = args
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let t = Arc::new(Target {
        addr: hostport.clone(),
        host: hostport,
        path: args.path,
        body: args.body.map(Bytes::from),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let rt = rt.unwrap_or_else(|e| panic!("runtime: {e}"));
    let out = rt.block_on(async move {
        match args.mode {
            Mode::Closed {
                conns,
                duration,
                warmup,
            } => closed(t, conns, duration, warmup).await,
            Mode::Rate {
                rate: r,
                duration,
                conns,
                warmup,
            } => rate(t, r, duration, conns, warmup).await,
            Mode::Streams {
                streams: n,
                timeout,
                stall_ms,
                ramp_ms,
            } => streams(t, n, timeout, stall_ms, ramp_ms).await,
        }
    });
    println!("{out}");
}
