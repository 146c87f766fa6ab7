//! The response cache in front of the generation routes (see
//! [`crate::cache`]): after admission (a hit is only ever served to a
//! principal that was admitted to make the request, its limits counted),
//! before the pipeline. Requests whose model has no `cache:` policy pass
//! untouched, without an `X-Augur-Cache` header.

use std::future::Future;

use axum::{extract::Request, response::Response};
use http::Method;
use serde_json::Value;

use crate::{
    cache::{self, Lookup, Parts, Recorder, Scope, X_AUGUR_CACHE},
    ingress::{Admitted, Model},
    limits::usage::Counts,
    policy::CachePolicy,
    state::AppState,
};

/// Whether `req` goes through the response cache: a model request on a
/// generation route whose model's policy has one. Requests it is not
/// (most traffic) pay this check alone.
pub(crate) fn applies(admitted: &Admitted, req: &Request) -> bool {
    cached(admitted, req).is_some()
}

/// Answer `req` from the cache, or with `answer` (recorded on a miss).
pub(crate) async fn serve<F, Fut>(
    state: &AppState,
    admitted: &Admitted,
    req: Request,
    answer: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let Some((model, policy, path, capacity)) = cached(admitted, &req) else {
        return answer(req).await;
    };
    let Some(key) = key_of(state, admitted, model, policy, path, &req) else {
        state
            .cache
            .count(admitted.principal.label(), &model.name, Lookup::Bypass);
        let mut r = answer(req).await;
        r.headers_mut()
            .insert(X_AUGUR_CACHE, Lookup::Bypass.header());
        return r;
    };
    if let Some(entry) = state.cache.get(&key, capacity) {
        state
            .cache
            .count(admitted.principal.label(), &model.name, Lookup::Hit);
        if let Some(c) = entry.counts {
            cache::count_saved(&model.name, c.input + c.output);
        }
        admitted.usage.replayed();
        match entry.counts {
            _ if !policy.charge_hits => admitted.usage.waive(),
            // The tokens it cost when it was made (the time it took, not).
            Some(c) => admitted.usage.report(Counts { eval_ns: None, ..c }),
            // Charged as a forwarded answer is, from its body.
            None => {}
        }
        return cache::replay(&entry);
    }
    state
        .cache
        .count(admitted.principal.label(), &model.name, Lookup::Miss);
    let recorder = Recorder {
        store: state.cache.clone(),
        key,
        capacity,
        cap: cache::entry_cap(policy.max_bytes, capacity),
        ttl: policy.ttl,
        path,
        usage: admitted.usage.clone(),
    };
    cache::record(answer(req).await, recorder)
}

/// The model, its cache policy, the route and the whole cache's bound,
/// when the request is a model request on a generation route whose model
/// has a cache.
fn cached<'a>(
    admitted: &'a Admitted,
    req: &Request,
) -> Option<(&'a Model, &'a CachePolicy, &'static str, u64)> {
    let model = admitted.model.as_ref()?;
    let policy = model.policy.cache.as_ref()?;
    if req.method() != Method::POST {
        return None;
    }
    let path = *cache::GENERATION_ROUTES
        .iter()
        .find(|p| **p == req.uri().path())?;
    let capacity = cache::capacity(&admitted.policy)?;
    Some((model, policy, path, capacity))
}

/// The request's key; `None` when it bypasses the cache: the client said
/// `no-cache`, the answer is not deterministic, or the model's build (its
/// digest) is not known.
fn key_of(
    state: &AppState,
    admitted: &Admitted,
    model: &Model,
    policy: &CachePolicy,
    path: &'static str,
    req: &Request,
) -> Option<cache::Key> {
    if cache::declined(req.headers()) {
        return None;
    }
    let body: Value = serde_json::from_slice(admitted.body.as_deref()?).ok()?;
    if !cache::deterministic(path, &body) {
        return None;
    }
    let digest = state.fleet.digest_of(&model.name)?;
    let scope = match (&policy.share, admitted.principal.key_id()) {
        (Some(group), _) => Scope::Group(group),
        (None, Some(id)) => Scope::Key(id),
        (None, None) => Scope::Anonymous,
    };
    Some(cache::key(&Parts {
        scope,
        route: path,
        body: &body,
        stream: cache::streams(path, &body),
        digest: &digest,
        policy_version: &admitted.policy.meta.version,
    }))
}
