//! The Prometheus recorder every metric goes to, and whether the access
//! log is written.

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Install the Prometheus recorder; returns the handle `/metrics` renders.
pub fn install_metrics() -> Result<PrometheusHandle, String> {
    let buckets = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
        5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    ];
    // The GenAI conventions' advice for token counts: powers of four.
    let tokens: Vec<f64> = (0..14).map(|i| 4f64.powi(i)).collect();
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".to_string()), &buckets)
        .map_err(|e| e.to_string())?
        .set_buckets_for_metric(
            Matcher::Full("gen_ai_client_token_usage".to_string()),
            &tokens,
        )
        .map_err(|e| e.to_string())?
        .install_recorder()
        .map_err(|e| e.to_string())
}

/// Whether the access log is written: its labels are only kept then.
pub(crate) fn access_log_enabled() -> bool {
    tracing::enabled!(target: "augur::access", tracing::Level::INFO)
}
