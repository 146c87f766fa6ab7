//! The route table: everything augur knows about a route, in one place.
//!
//! For each (method, canonical path) it says the route's class (what auth
//! and limits do), the error shape its clients read, which body fields name
//! models, and whether a success changes the upstream's models (so cached
//! capabilities are dropped). Routes not listed are [`Class::Other`]: they
//! need a key when auth is required and are forwarded as they came.

use http::Method;

use crate::{error::Flavor, policy::Scopes};

/// What a route means for auth and limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// GET/HEAD `/`: liveness probes, never authenticated.
    Liveness,
    /// Listing and describing models: need a key; a named model must be
    /// allowed for it; not counted toward limits.
    Meta,
    /// Generation and embedding: the body names the model; allow-lists,
    /// rate limits, token budgets and concurrency apply.
    Model,
    /// Pull, push, create, copy, delete: every model the body names must be
    /// allowed; counted like [`Class::Model`].
    Management,
    /// Anything else: needs a key when auth is required.
    Other,
}

/// One route's entry in the table.
#[derive(Debug, PartialEq, Eq)]
pub struct RouteSpec {
    pub class: Class,
    pub flavor: Flavor,
    /// Top-level body fields that name models. The first non-empty one is
    /// the model limits are counted for; every one must be allowed.
    pub names: &'static [&'static str],
    /// The model is the last path segment (`/v1/models/{model}`).
    pub path_model: bool,
    /// A success changes which models the upstream has.
    pub changes_models: bool,
    /// The body may be larger than the body limit (blob uploads).
    pub unbounded_body: bool,
    /// The body is `multipart/form-data` (see [`super::multipart`]).
    pub form: bool,
}

impl RouteSpec {
    /// Whether augur reads the body before admitting the request.
    pub fn reads_body(&self) -> bool {
        !self.names.is_empty()
    }

    /// Whether rate limits, token budgets and concurrency apply.
    pub fn counts(&self) -> bool {
        matches!(self.class, Class::Model | Class::Management)
    }

    /// Whether a key is needed when `auth.required` is true.
    pub fn needs_key(&self) -> bool {
        self.class != Class::Liveness
    }

    /// The scope a caller needs here (`None`: liveness, open to all):
    /// `generate` for model routes, `read` for listing and describing
    /// models, `manage` for the model store and for every path augur does
    /// not know (a newer Ollama's route may change the store).
    pub fn scope(&self) -> Option<&'static str> {
        match self.class {
            Class::Liveness => None,
            Class::Model => Some("generate"),
            Class::Meta => Some("read"),
            Class::Management | Class::Other => Some("manage"),
        }
    }

    /// Whether `scopes` include the one this route needs.
    pub fn allows(&self, scopes: &Scopes) -> bool {
        match self.class {
            Class::Liveness => true,
            Class::Model => scopes.generate,
            Class::Meta => scopes.read,
            Class::Management | Class::Other => scopes.manage,
        }
    }
}

const fn spec(class: Class, flavor: Flavor, names: &'static [&'static str]) -> RouteSpec {
    RouteSpec {
        class,
        flavor,
        names,
        path_model: false,
        changes_models: false,
        unbounded_body: false,
        form: false,
    }
}

const MODEL: &[&str] = &["model"];
const MODEL_OR_NAME: &[&str] = &["model", "name"];

static LIVENESS: RouteSpec = spec(Class::Liveness, Flavor::Ollama, &[]);
static META: RouteSpec = spec(Class::Meta, Flavor::Ollama, &[]);
static SHOW: RouteSpec = spec(Class::Meta, Flavor::Ollama, MODEL_OR_NAME);
static OPENAI_META: RouteSpec = spec(Class::Meta, Flavor::OpenAi, &[]);
static OPENAI_MODEL: RouteSpec = RouteSpec {
    path_model: true,
    ..spec(Class::Meta, Flavor::OpenAi, &[])
};
static GENERATE: RouteSpec = spec(Class::Model, Flavor::Ollama, MODEL);
static OPENAI_GENERATE: RouteSpec = spec(Class::Model, Flavor::OpenAi, MODEL);
static ANTHROPIC_GENERATE: RouteSpec = spec(Class::Model, Flavor::Anthropic, MODEL);
/// Anthropic's token count (Claude Code asks it): describes, generates nothing.
static ANTHROPIC_COUNT: RouteSpec = spec(Class::Meta, Flavor::Anthropic, MODEL);
static PULL_PUSH: RouteSpec = spec(Class::Management, Flavor::Ollama, MODEL_OR_NAME);
static CHANGE: RouteSpec = RouteSpec {
    changes_models: true,
    ..spec(Class::Management, Flavor::Ollama, MODEL_OR_NAME)
};
static CREATE: RouteSpec = RouteSpec {
    changes_models: true,
    ..spec(
        Class::Management,
        Flavor::Ollama,
        &["model", "name", "from"],
    )
};
static COPY: RouteSpec = RouteSpec {
    changes_models: true,
    ..spec(
        Class::Management,
        Flavor::Ollama,
        &["source", "destination"],
    )
};
static TRANSCRIBE: RouteSpec = RouteSpec {
    form: true,
    ..spec(Class::Model, Flavor::OpenAi, MODEL)
};
static BLOB: RouteSpec = RouteSpec {
    unbounded_body: true,
    ..spec(Class::Other, Flavor::Ollama, &[])
};
static OTHER: RouteSpec = spec(Class::Other, Flavor::Ollama, &[]);
static OPENAI_OTHER: RouteSpec = spec(Class::Other, Flavor::OpenAi, &[]);

/// The entry for a request; `path` must be canonical (see [`super::path`]).
pub(crate) fn classify(method: &Method, path: &str) -> &'static RouteSpec {
    let get = method == Method::GET || method == Method::HEAD;
    let post = method == Method::POST;
    match path {
        "/" if get => &LIVENESS,
        "/api/tags" | "/api/version" | "/api/ps" if get => &META,
        "/api/show" if post => &SHOW,
        "/api/chat" | "/api/generate" | "/api/embed" | "/api/embeddings" if post => &GENERATE,
        "/v1/chat/completions" | "/v1/completions" | "/v1/embeddings" | "/v1/responses" if post => {
            &OPENAI_GENERATE
        }
        "/v1/messages" if post => &ANTHROPIC_GENERATE,
        "/v1/messages/count_tokens" if post => &ANTHROPIC_COUNT,
        "/v1/models" if get => &OPENAI_META,
        "/v1/audio/transcriptions" if post => &TRANSCRIBE,
        "/api/pull" if post => &CHANGE,
        "/api/push" if post => &PULL_PUSH,
        "/api/create" if post => &CREATE,
        "/api/copy" if post => &COPY,
        "/api/delete" if method == Method::DELETE => &CHANGE,
        _ if path.starts_with("/api/blobs/") => &BLOB,
        _ if get && path.starts_with("/v1/models/") => &OPENAI_MODEL,
        _ if path.starts_with("/v1/") => &OPENAI_OTHER,
        _ => &OTHER,
    }
}

/// The metric label of a canonical `path`: the route as this table knows
/// it, a pattern for paths that carry an id, `other` for the rest (so
/// labels stay few whatever clients send).
pub(crate) fn metric_label(path: &str) -> &'static str {
    const KNOWN: [&str; 28] = [
        "/",
        "/api/version",
        "/api/status",
        "/api/tags",
        "/api/ps",
        "/api/show",
        "/api/chat",
        "/api/generate",
        "/api/embed",
        "/api/embeddings",
        "/api/pull",
        "/api/push",
        "/api/create",
        "/api/copy",
        "/api/delete",
        "/api/me",
        "/api/signout",
        "/v1/chat/completions",
        "/v1/completions",
        "/v1/embeddings",
        "/v1/models",
        "/v1/responses",
        "/v1/messages",
        "/v1/audio/transcriptions",
        "/api/experimental/web_search",
        "/api/experimental/web_fetch",
        "/api/experimental/model-recommendations",
        "/api/blobs/:digest",
    ];
    if let Some(k) = KNOWN.iter().find(|k| **k == path) {
        return k;
    }
    if path.starts_with("/api/blobs/") {
        "/api/blobs/:digest"
    } else if path.starts_with("/v1/models/") {
        "/v1/models/:model"
    } else {
        "other"
    }
}

#[cfg(test)]
#[path = "routes_tests.rs"]
mod tests;
