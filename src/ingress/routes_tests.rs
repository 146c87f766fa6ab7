//! Unit tests of `routes`.

use super::*;

#[test]
fn routes_have_low_cardinality_labels() {
    assert_eq!(metric_label("/api/chat"), "/api/chat");
    assert_eq!(metric_label("/api/blobs/sha256:abc"), "/api/blobs/:digest");
    assert_eq!(metric_label("/v1/models/llama3"), "/v1/models/:model");
    assert_eq!(metric_label("/some/new/endpoint"), "other");
}

#[test]
fn routes_are_classified() {
    let c = |m: Method, p: &str| classify(&m, p).class;
    assert_eq!(c(Method::GET, "/"), Class::Liveness);
    assert_eq!(c(Method::HEAD, "/"), Class::Liveness);
    assert_eq!(c(Method::POST, "/"), Class::Other);
    assert_eq!(c(Method::POST, "/api/show"), Class::Meta);
    assert_eq!(c(Method::GET, "/api/tags"), Class::Meta);
    assert_eq!(c(Method::GET, "/v1/models/gemma3"), Class::Meta);
    assert_eq!(c(Method::POST, "/api/chat"), Class::Model);
    assert_eq!(c(Method::POST, "/v1/messages"), Class::Model);
    assert_eq!(c(Method::GET, "/api/chat"), Class::Other);
    assert_eq!(c(Method::POST, "/api/create"), Class::Management);
    assert_eq!(c(Method::DELETE, "/api/delete"), Class::Management);
    assert_eq!(c(Method::POST, "/api/blobs/sha256:1"), Class::Other);
    assert_eq!(c(Method::POST, "/api/unknown"), Class::Other);
}

#[test]
fn every_route_that_names_a_model_reads_it() {
    for (m, p) in [
        (Method::POST, "/api/chat"),
        (Method::POST, "/api/generate"),
        (Method::POST, "/api/embed"),
        (Method::POST, "/api/embeddings"),
        (Method::POST, "/api/show"),
        (Method::POST, "/api/pull"),
        (Method::POST, "/api/push"),
        (Method::POST, "/api/create"),
        (Method::POST, "/api/copy"),
        (Method::DELETE, "/api/delete"),
        (Method::POST, "/v1/chat/completions"),
        (Method::POST, "/v1/completions"),
        (Method::POST, "/v1/embeddings"),
        (Method::POST, "/v1/responses"),
        (Method::POST, "/v1/messages"),
        (Method::POST, "/v1/audio/transcriptions"),
    ] {
        assert!(classify(&m, p).reads_body(), "{m} {p}");
    }
    assert!(classify(&Method::GET, "/v1/models/x").path_model);
    assert!(
        classify(&Method::POST, "/api/create")
            .names
            .contains(&"from")
    );
}

#[test]
fn every_route_needs_its_scope() {
    let read_only = Scopes {
        read: true,
        ..Scopes::NONE
    };
    let generate_only = Scopes {
        generate: true,
        ..Scopes::NONE
    };
    let manage_only = Scopes {
        manage: true,
        ..Scopes::NONE
    };
    for (m, p, scope) in [
        (Method::GET, "/", None),
        (Method::GET, "/api/tags", Some("read")),
        (Method::GET, "/api/version", Some("read")),
        (Method::GET, "/api/ps", Some("read")),
        (Method::POST, "/api/show", Some("read")),
        (Method::GET, "/v1/models", Some("read")),
        (Method::GET, "/v1/models/gemma3", Some("read")),
        (Method::POST, "/api/chat", Some("generate")),
        (Method::POST, "/v1/messages", Some("generate")),
        (Method::POST, "/v1/messages/count_tokens", Some("read")),
        (Method::POST, "/api/pull", Some("manage")),
        (Method::POST, "/api/push", Some("manage")),
        (Method::POST, "/api/create", Some("manage")),
        (Method::POST, "/api/copy", Some("manage")),
        (Method::DELETE, "/api/delete", Some("manage")),
        (Method::POST, "/api/blobs/sha256:1", Some("manage")),
        (Method::HEAD, "/api/blobs/sha256:1", Some("manage")),
        (Method::POST, "/api/unknown", Some("manage")),
        (Method::GET, "/v1/files", Some("manage")),
    ] {
        let route = classify(&m, p);
        assert_eq!(route.scope(), scope, "{m} {p}");
        let only = match scope {
            None => Scopes::NONE,
            Some("read") => read_only,
            Some("generate") => generate_only,
            Some(_) => manage_only,
        };
        assert!(route.allows(&only), "{m} {p}");
        if scope.is_some() {
            assert!(!route.allows(&Scopes::NONE), "{m} {p}");
        }
        assert!(route.allows(&Scopes::ALL), "{m} {p}");
    }
}

#[test]
fn flavors_follow_the_surface() {
    assert_eq!(classify(&Method::POST, "/api/chat").flavor, Flavor::Ollama);
    assert_eq!(
        classify(&Method::POST, "/v1/chat/completions").flavor,
        Flavor::OpenAi
    );
    assert_eq!(
        classify(&Method::GET, "/v1/anything").flavor,
        Flavor::OpenAi
    );
}
