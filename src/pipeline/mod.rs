//! The body-aware request path.
