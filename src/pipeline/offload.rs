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
    let span = tracing::Span::current();
    match tokio::task::spawn_blocking(move || span.in_scope(f)).await {
        Ok(r) => Ok(r),
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(_) => Err(ProxyError::Internal("augur is shutting down".into())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::cpu;

    #[tokio::test]
    async fn runs_off_a_current_thread_loop_and_returns_the_result() {
        let caller = std::thread::current().id();
        let (other, n) = cpu(move || (std::thread::current().id() != caller, 6 * 7))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(other, "the work runs on a blocking thread");
        assert_eq!(n, 42);
    }

    #[tokio::test]
    async fn a_panic_is_resumed_in_the_caller() {
        let task = tokio::spawn(cpu(|| -> u8 { panic!("boom") }));
        let e = task.await.err().map(|e| e.is_panic());
        assert_eq!(e, Some(true));
    }

    #[test]
    fn runs_inline_outside_a_runtime() {
        let caller = std::thread::current().id();
        let same = futures_util::FutureExt::now_or_never(cpu(move || {
            std::thread::current().id() == caller
        }));
        assert!(matches!(same, Some(Ok(true))));
    }
}
