//! `augur`: parse the command line, load the config and policies, serve.

use std::process::ExitCode;

use clap::Parser;

use augur::{
    app::{self, Tls},
    config::{Cli, Command, Config},
    otel::TraceError,
};
use opentelemetry_sdk::trace::SdkTracerProvider;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Replay(args)) = &cli.command {
        return augur::replay(&cli, args);
    }
    let config = match Config::load(&cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("augur: {e}");
            return ExitCode::from(2);
        }
    };
    // Before any schema is compiled (policies name schemas too).
    augur::set_cache_budget(config.schema_cache_bytes);
    // The certificate files are checked by --check-config too.
    let tls = match Tls::load(&config) {
        Ok(tls) => tls,
        Err(e) => {
            eprintln!("augur: {e}");
            return ExitCode::from(2);
        }
    };
    if cli.check_config {
        return match augur::policy::load_dir(&config.policies, &config.schemas) {
            Ok(policy) if let Err(e) = config.check_exposure(policy.auth.keys.len()) => {
                eprintln!("augur: {e}");
                ExitCode::from(2)
            }
            Ok(policy) => {
                eprintln!(
                    "augur: config OK; policies OK ({} file{}, version {})",
                    policy.meta.files.len(),
                    if policy.meta.files.len() == 1 {
                        ""
                    } else {
                        "s"
                    },
                    policy.meta.version
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("augur: invalid policy: {e}");
                ExitCode::from(2)
            }
        };
    }
    let traces = match init_tracing(&config) {
        Ok(traces) => traces,
        Err(e) => {
            eprintln!("augur: {e}");
            return ExitCode::from(2);
        }
    };
    let open_files = raise_open_files_limit();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("augur: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(app::run(config, open_files, tls));
    if let Some(provider) = traces {
        // The spans still queued, within the export timeout.
        if let Err(e) = provider.shutdown() {
            tracing::warn!(error = %e, "traces not all exported at exit");
        }
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("augur: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The log output, and the trace exporter when traces are configured
/// (returned, to be flushed at exit).
fn init_tracing(config: &Config) -> Result<Option<SdkTracerProvider>, TraceError> {
    use tracing_subscriber::{layer::SubscriberExt, util::SubscriberInitExt};
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&config.log_level));
    // Trace spans are for the exporter, not the log.
    let filter = match format!("{}=off", augur::otel::TARGET).parse() {
        Ok(off) => filter.add_directive(off),
        Err(_) => filter,
    };
    let fmt = augur::log_layer(config.log_format, filter);
    let provider = config
        .traces
        .as_ref()
        .map(augur::otel::otlp_provider)
        .transpose()?;
    let traces = provider.as_ref().map(augur::otel::layer);
    tracing_subscriber::registry().with(fmt).with(traces).init();
    if let Some(t) = &config.traces {
        let endpoint = augur::without_userinfo(&t.endpoint);
        tracing::info!(%endpoint, queue = t.queue_size, "exporting traces");
    }
    Ok(provider)
}

/// Raise the soft limit on open files to the hard limit, as Go programs
/// (Ollama among them) do at start: every stream holds two descriptors,
/// and the common soft default of 1,024 would refuse connections at about
/// 500 concurrent streams. Returns the limit in force.
fn raise_open_files_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::warn!(error = %e, soft = ?limit.current, "cannot raise the open files limit");
        }
    }
    getrlimit(Resource::Nofile).current
}
