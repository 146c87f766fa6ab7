//! The `augur replay` subcommand: serve the recordings on `--listen`
//! until interrupted, or `--check` them and exit 0 (all the same), 1 (a
//! difference) or 2 (the files or the config cannot be read).

use std::{process::ExitCode, sync::Arc};

use super::{check, server, tape::Tape};
use crate::config::{Cli, ReplayArgs};

/// Run `augur replay` with `args` (`cli`: the config and policies for
/// `--check`).
pub fn run(cli: &Cli, args: &ReplayArgs) -> ExitCode {
    let tape = match Tape::load(&args.files) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            eprintln!("augur replay: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("augur replay: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    if args.check {
        return match runtime.block_on(check::check(cli, args, tape)) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("augur replay: {e}");
                ExitCode::from(2)
            }
        };
    }
    match runtime.block_on(serve(args, tape)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("augur replay: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Serve the replay upstream on `--listen` until Ctrl-C or SIGTERM.
async fn serve(args: &ReplayArgs, tape: Arc<Tape>) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    eprintln!(
        "augur replay: {} recorded exchanges, {} models, on http://{}",
        tape.clients.len(),
        tape.models.len(),
        args.listen
    );
    let app = server::router(tape, args.timing);
    let mut stop = crate::shutdown::on_signal();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .await
        .map_err(|e| e.to_string())
}
