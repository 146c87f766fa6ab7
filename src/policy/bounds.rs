//! The bounds on a policy set, checked before any YAML is parsed, so a
//! huge, numerous or deeply nested set is refused in milliseconds instead
//! of tying up a core and memory. Errors name the file and the bound.
//!
//! | bound | value |
//! |---|---|
//! | bytes in one policy file (and in one `format` schema file it names) | [`MAX_FILE_BYTES`] |
//! | policy files in the directory | [`MAX_FILES`] |
//! | bytes in all policy files together | [`MAX_TOTAL_BYTES`] |
//! | nesting depth of one file | [`MAX_DEPTH`] |
//! | values one file may produce (YAML aliases re-use values) | its size in bytes + 64 |

/// Largest policy file, and largest `format` schema file a policy names.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// Most `*.yaml` / `*.yml` files in the policies directory.
pub const MAX_FILES: usize = 256;
/// Most bytes in all policy files together.
pub const MAX_TOTAL_BYTES: u64 = 4 << 20;
/// Deepest nesting of collections in one policy file (real policies need
/// about 6).
pub const MAX_DEPTH: usize = 64;
/// Values a file may produce beyond one per byte of its text.
pub(crate) const SLACK_VALUES: usize = 64;
