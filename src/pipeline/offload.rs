//! CPU-heavy work on one answer, off the event loop: reading it against
//! its schema and repairing it, reading calls written as text, screening
//! tool calls against the conversation ([`crate::tools::grounding`],
//! relevance, repeats). On a large answer or conversation that is seconds
//! of CPU in the worst case, bounded but not small.
//!
//! Each augur worker serves its connections on a single-threaded event
//! loop (augur runs one single-threaded runtime per worker thread), so work done on it stalls every
//! other request of the worker, `GET /api/version` included.
//! `tokio::task::block_in_place` cannot help there (it needs a
//! multi-threaded runtime, and panics on a current-thread one); [`cpu`]
//! runs the work on tokio's blocking pool instead, which every runtime
//! has, and the event loop serves other requests until it is done. The
//! work owns what it reads (cheap clones: tool sets and screens are
//! shared, validators are a shared cache), so a request dropped meanwhile
//! only wastes it.
//!
//! Only per-answer steps are offloaded (a whole answer interpreted, a
//! whole answer's calls screened): a thread hop costs microseconds, which
//! per streamed chunk would add up.
//!
//! At most one piece of work per CPU runs at once; the others wait their
//! turn without a thread. More at once would finish no sooner, and each
//! holds what it works on: a schema compiled for one answer (megabytes
//! for some patterns, when the schema cache cannot keep it) and the
//! allocator's arena of its thread. Sixteen answers with distinct large
//! schemas validated at once grew the process by 84 MiB past its schema
//! cache; one per CPU keeps that to the few schemas being worked on.

use crate::error::ProxyError;

/// Run `f` on tokio's blocking pool and wait for it without holding the
/// event loop, in the caller's tracing span; inline outside a tokio
/// runtime. A panic in `f` is resumed here, as if `f` had run inline; an
/// error only when the runtime shuts down before `f` ran.
pub(crate) async fn cpu<R, F>(f: F) -> Result<R, ProxyError>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return Ok(f());
    }
    // The semaphore is never closed, so a permit always comes.
    let permit = turns().clone().acquire_owned().await.ok();
    let span = tracing::Span::current();
    let work = move || {
        let _turn = permit;
        span.in_scope(f)
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(r) => Ok(r),
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(_) => Err(ProxyError::Internal("augur is shutting down".into())),
        },
    }
}

/// One turn per CPU, shared by every runtime of the process.
fn turns() -> &'static std::sync::Arc<tokio::sync::Semaphore> {
    static TURNS: std::sync::OnceLock<std::sync::Arc<tokio::sync::Semaphore>> =
        std::sync::OnceLock::new();
    TURNS.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        std::sync::Arc::new(tokio::sync::Semaphore::new(cpus.max(2)))
    })
}

#[cfg(test)]
#[path = "offload_tests.rs"]
mod tests;
