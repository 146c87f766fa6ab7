//! Auth, rate, token and concurrency limits.
