//! What validating a value found: [`Violation`]s with JSON pointers into
//! the instance, or why it could not be checked ([`Checked`]), and the
//! one-line form retry feedback and errors quote ([`format_violations`]).

/// One violation, with a JSON pointer into the instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub pointer: String,
    pub message: String,
}

/// What validating one value found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checked {
    /// Violations found (empty with `unchecked: None` = valid).
    pub violations: Vec<Violation>,
    /// Why the value could not be checked, when it could not: never to be
    /// taken as valid.
    pub unchecked: Option<String>,
}

impl Checked {
    /// Could not be checked, for `why`.
    pub fn unchecked(why: String) -> Checked {
        Checked {
            violations: Vec::new(),
            unchecked: Some(why),
        }
    }

    /// Checked and valid.
    pub fn is_valid(&self) -> bool {
        self.violations.is_empty() && self.unchecked.is_none()
    }
}

/// The first `max` violations as one line, e.g.
/// `/age: "five" is not of type "integer"; /name: "name" is a required property`.
pub(crate) fn format_violations(violations: &[Violation], max: usize) -> String {
    let mut parts: Vec<String> = violations
        .iter()
        .take(max)
        .map(|v| {
            let at = if v.pointer.is_empty() {
                "/"
            } else {
                &v.pointer
            };
            format!("{at}: {}", shorten(&v.message, 200))
        })
        .collect();
    if violations.len() > max {
        parts.push(format!("and {} more", violations.len() - max));
    }
    parts.join("; ")
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max.saturating_sub(3)).collect();
    format!("{cut}...")
}
