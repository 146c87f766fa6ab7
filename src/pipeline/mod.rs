//! The body-aware request path: `/api/chat`, `/api/generate`,
//! `/v1/chat/completions`, and the capability-bearing `/api/show` and
//! `/api/tags`.

pub mod gate;
