//! Wire helpers.
