//! The status table, the endings table and the error bodies, pinned.

use super::*;

#[test]
fn status_table_is_pinned() {
    let cases = [
        (ProxyError::UpstreamUnavailable("x".into()), 502),
        (ProxyError::UpstreamCut("x".into()), 502),
        (ProxyError::UpstreamTimeout(1), 504),
        (ProxyError::UpstreamProtocol("x".into()), 502),
        (ProxyError::BodyTooLarge(1), 413),
        (
            ProxyError::HeadersTooLarge {
                max_bytes: 1,
                max_fields: 1,
            },
            431,
        ),
        (ProxyError::ClientTimeout, 408),
        (ProxyError::BadRequest("x".into()), 400),
        (
            ProxyError::Schema {
                what: "format".into(),
                source: crate::validate::SchemaRejected::Invalid("x".into()),
            },
            400,
        ),
        (ProxyError::FormatTooLarge { size: 2, limit: 1 }, 400),
        (ProxyError::Unprocessable("x".into()), 422),
        (ProxyError::Internal("x".into()), 500),
    ];
    for (err, status) in cases {
        assert_eq!(err.status().as_u16(), status, "{err:?}");
    }
}

#[test]
fn every_error_says_how_its_request_ended() {
    let refused = [
        ProxyError::BadRequest("x".into()),
        ProxyError::Unprocessable("the tool call was refused by policy".into()),
        ProxyError::Limited {
            status: StatusCode::TOO_MANY_REQUESTS,
            message: "x".into(),
            headers: HeaderMap::new(),
        },
        ProxyError::BodyTooLarge(1),
    ];
    for e in refused {
        assert_eq!(e.ending(), Ending::Refused, "{e:?}");
        let response = e.into_response();
        assert_eq!(
            response.extensions().get::<Ending>(),
            Some(&Ending::Refused)
        );
    }
    let upstream =
        |status: u16| ProxyError::upstream(StatusCode::from_u16(status).unwrap(), "x".into());
    for (e, ending) in [
        (ProxyError::UpstreamCut("x".into()), Ending::UpstreamCut),
        (ProxyError::UpstreamTimeout(1), Ending::TimedOut),
        (ProxyError::UpstreamUnavailable("x".into()), Ending::Error),
        (upstream(404), Ending::Error),
        (upstream(500), Ending::Error),
        (ProxyError::Internal("x".into()), Ending::Error),
    ] {
        assert_eq!(e.ending(), ending, "{e:?}");
    }
    // Shaped for its route, an error response still says so.
    let shaped = shaped(
        ProxyError::UpstreamTimeout(1).into_response(),
        Flavor::OpenAi,
    );
    assert_eq!(shaped.extensions().get::<Ending>(), Some(&Ending::TimedOut));
}

#[test]
fn bodies_have_the_route_shape() {
    let ollama = error_body(StatusCode::BAD_GATEWAY, "down", Flavor::Ollama);
    assert_eq!(ollama, r#"{"error":"down"}"#);
    let openai = error_body(StatusCode::BAD_REQUEST, "bad", Flavor::OpenAi);
    assert_eq!(
        openai,
        r#"{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}"#
    );
    assert_eq!(&error_line("cut")[..], b"{\"error\":\"cut\"}\n");
    let anthropic: serde_json::Value = serde_json::from_str(&error_body(
        StatusCode::TOO_MANY_REQUESTS,
        "slow down",
        Flavor::Anthropic,
    ))
    .unwrap();
    assert_eq!(anthropic["type"], "error");
    assert_eq!(anthropic["error"]["type"], "rate_limit_error");
    assert_eq!(anthropic["error"]["message"], "slow down");
    assert!(
        anthropic["request_id"]
            .as_str()
            .unwrap()
            .starts_with("req_")
    );
    for (status, kind) in [
        (401, "authentication_error"),
        (403, "permission_error"),
        (413, "api_error"),
        (503, "overloaded_error"),
        (422, "api_error"),
    ] {
        assert_eq!(
            anthropic_error_type(StatusCode::from_u16(status).unwrap()),
            kind
        );
    }
}

#[test]
fn upstream_failures_are_told_apart() {
    let up = |status: u16, message: &str| {
        ProxyError::upstream(StatusCode::from_u16(status).unwrap(), message.into())
    };
    assert!(ProxyError::UpstreamUnavailable("x".into()).is_upstream_failure());
    assert!(ProxyError::UpstreamTimeout(1).is_upstream_failure());
    assert!(up(500, "model runner has unexpectedly stopped").is_upstream_failure());
    assert!(up(503, "server busy").is_upstream_failure());
    assert!(!up(500, "invalid JSON schema in format").is_upstream_failure());
    assert!(!up(404, "model 'x' not found").is_upstream_failure());
    assert!(!ProxyError::Unprocessable("x".into()).is_upstream_failure());
}

#[test]
fn internal_details_stay_inside() {
    let err = ProxyError::Internal("secret path /etc".into());
    assert_eq!(err.client_message(), "internal error");
}
