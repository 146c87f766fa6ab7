//! Stage 7: a job's attempts, from the upstream's answer to the one the
//! client gets.
//!
//! ```text
//! retry_loop   ask, interpret (interpret, text_mode, plain), retry with
//!              the violations as feedback, degrade a rejected schema
//! screen_calls screen the calls of a valid answer; re-ask (reask) when
//!              only repeats or calls nobody asked for are left
//! doubt        a valid answer the model was unsure of, asked once more
//!              (validate.on_low_confidence: retry)
//! fallback     the policy's fallback models, when the answer keeps failing
//! finish       shape, report and audit the answer, or refuse it (422)
//! ```

pub(crate) mod doubt;
pub(crate) mod fallback;
pub(crate) mod finish;
pub(crate) mod interpret;
pub(crate) mod plain;
pub(crate) mod reask;
pub(crate) mod retry_loop;
pub(crate) mod screen_calls;
pub(crate) mod text_mode;
