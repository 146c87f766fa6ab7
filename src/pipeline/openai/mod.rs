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

use crate::{
    app::AppState,
    error::{Flavor, ProxyError},
};

use super::{
    flows, gate, native,
    plan::{self, Route},
    prepare,
};

/// `POST /v1/chat/completions`.
pub async fn chat_completions(State(state): State<AppState>, req: Request) -> Response {
    handle(state, req)
        .await
        .unwrap_or_else(|e| e.into_response_for(Flavor::OpenAi))
}

async fn handle(state: AppState, req: Request) -> Result<Response, ProxyError> {
    let native::Admitted {
        parsed,
        model,
        policy,
        admission,
    } = native::admit(&state, req).await?;
    let (Some(body), Some(model)) = (parsed.body.as_ref(), model) else {
        let response = native::forward_bytes(&state, parsed).await?;
        return Ok(gate::hold_until_done(response, admission));
    };
    let needs_look = body
        .get("tools")
        .is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()))
        || body.get("response_format").is_some_and(|f| !f.is_null());
    if !needs_look {
        let response = native::forward_bytes(&state, parsed).await?;
        return Ok(gate::hold_until_done(response, admission));
    }
    let translated = request::translate(body)?;
    let model_policy = policy.model(&model);
    let plan = plan::decide(
        Route::Chat,
        &translated.body,
        &model,
        &model_policy,
        &state.capabilities,
        false,
    )
    .await?;
    if plan.tools.is_none() && !plan.validate && !plan.strip_tools && !plan.think {
        let response = native::forward_bytes(&state, parsed).await?;
        return Ok(gate::hold_until_done(response, admission));
    }
    let emulated = plan.tools.as_ref().map(|_| "tools");
    if emulated.is_some() {
        metrics::counter!("augur_emulations_total", "kind" => "tools").increment(1);
    }
    let delivery = native::delivery_for(&plan);
    let (upstream_body, expect) = prepare::prepare(
        Route::Chat,
        &translated.body,
        plan,
        state.config.format_limit,
    )?;
    let admitted = native::Admitted {
        parsed,
        model: Some(model),
        policy,
        admission,
    };
    let job = native::job(
        &state,
        &admitted,
        Route::Chat,
        upstream_body,
        expect,
        emulated,
    );
    let out = flows::run(job, delivery).await?;
    let meta = response::Meta::new(&translated.model, translated.include_usage);
    Ok(gate::hold_until_done(
        response::render(meta, out),
        admitted.admission,
    ))
}
