//! `POST /v1/chat/completions`: tool emulation and `response_format`
//! repair for OpenAI clients. The request is translated to Ollama's
//! `/api/chat`, run through the same stages as a native request, and the
//! answer translated back. Requests augur has nothing to change about are
//! forwarded byte for byte to the upstream's own OpenAI layer.

pub mod request;
pub mod response;

use axum::{
    extract::{Request, State},
    response::Response,
};

use crate::{app::AppState, error::ProxyError, ingress::Admitted};

use super::{
    flows, native,
    plan::{self, Route},
    prepare,
};

/// `POST /v1/chat/completions`.
pub async fn chat_completions(
    State(state): State<AppState>,
    admitted: Admitted,
    req: Request,
) -> Response {
    let flavor = admitted.route.flavor;
    handle(state, admitted, req)
        .await
        .unwrap_or_else(|e| e.into_response_for(flavor))
}

async fn handle(state: AppState, admitted: Admitted, req: Request) -> Result<Response, ProxyError> {
    let (parts, _) = req.into_parts();
    let bytes = admitted.body.clone().unwrap_or_default();
    let Some(model) = admitted.model.as_ref().filter(|_| admitted.acted_on) else {
        return native::forward_bytes(&state, parts, bytes).await;
    };
    let body = native::parse_object(&bytes)?;
    let needs_look = body
        .get("tools")
        .is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()))
        || body.get("response_format").is_some_and(|f| !f.is_null());
    if !needs_look {
        return native::forward_bytes(&state, parts, bytes).await;
    }
    let translated = request::translate(&body)?;
    let plan = plan::decide(
        Route::Chat,
        &translated.body,
        &model.raw,
        &model.policy,
        &state.capabilities,
        false,
    )
    .await?;
    if plan.tools.is_none() && !plan.validate && !plan.strip_tools && !plan.think {
        return native::forward_bytes(&state, parts, bytes).await;
    }
    let emulated = native::emulated(&plan);
    native::note_emulation(&parts, emulated);
    let delivery = native::delivery_for(&plan);
    let (upstream_body, expect) = prepare::prepare(
        Route::Chat,
        &translated.body,
        plan,
        state.config.format_limit,
    )?;
    let job = native::job(
        &state,
        &admitted,
        &parts,
        Route::Chat,
        upstream_body,
        expect,
        emulated,
    );
    let out = flows::run(job, delivery).await?;
    let meta = response::Meta::new(&translated.model, translated.include_usage);
    Ok(response::render(meta, out))
}
