//! What a principal may reach: the scopes of an API key
//! (`auth.keys[].scopes`) and of a request without one
//! (`auth.anonymous_scopes`).

/// What a principal may reach: `scopes` of a key, `auth.anonymous_scopes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scopes {
    /// Generation and embedding routes (`/api/chat`, `/v1/messages`, …).
    pub generate: bool,
    /// Listing and describing models (`/api/tags`, `/api/show`, `/api/ps`,
    /// `/v1/models`, `/api/version`).
    pub read: bool,
    /// The model store: pull, push, create, copy, delete, blobs, and
    /// every path augur does not know.
    pub manage: bool,
}

impl Scopes {
    /// What a key without `scopes`, and an anonymous caller, gets.
    pub const DEFAULT: Scopes = Scopes {
        generate: true,
        read: true,
        manage: false,
    };
    /// Every scope.
    pub const ALL: Scopes = Scopes {
        generate: true,
        read: true,
        manage: true,
    };
    /// No scope.
    pub const NONE: Scopes = Scopes {
        generate: false,
        read: false,
        manage: false,
    };

    /// The scopes as written in a policy file, in order.
    pub fn names(self) -> Vec<&'static str> {
        [
            (self.generate, "generate"),
            (self.read, "read"),
            (self.manage, "manage"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }

    /// Scopes from their names; the unknown name on error.
    pub fn parse(names: &[String]) -> Result<Scopes, String> {
        let mut s = Scopes::NONE;
        for name in names {
            match name.as_str() {
                "generate" => s.generate = true,
                "read" => s.read = true,
                "manage" => s.manage = true,
                other => return Err(other.to_string()),
            }
        }
        Ok(s)
    }
}
