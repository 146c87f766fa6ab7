//! The body-aware request path: `/api/chat`, `/api/generate`,
//! `/v1/chat/completions`, and the capability-bearing `/api/show` and
//! `/api/tags`.

pub mod advertise;
pub mod attempts;
pub mod call;
pub mod checks;
pub mod flows;
pub mod native;
pub mod openai;
pub mod output;
pub mod plan;
pub mod prepare;
pub mod splitter;
pub mod stream_tools;
