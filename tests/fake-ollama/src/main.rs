//! `fake-ollama --listen ADDR`: the fake Ollama 0.32.15 as a standalone server (benchmarks,
//! manual poking with curl). Runs until interrupted.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;

#[derive(Parser)]
#[command(about = "A fake Ollama 0.32.15 server for tests and benchmarks")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:11434")]
    listen: SocketAddr,
    /// Delay before the response head for the `slow-first-byte` model.
    #[arg(long, env = "SLOW_MS", default_value_t = 2000)]
    slow_ms: u64,
    /// Pause between stream chunks for ordinary models.
    #[arg(long, default_value_t = 0)]
    chunk_delay_ms: u64,
    /// Do not keep the last request's headers/body (cheaper per request).
    #[arg(long)]
    no_record: bool,
    /// Worker threads (default: tokio's choice).
    #[arg(long)]
    threads: Option<usize>,
    /// A copy of a model, as `ollama cp` makes it: `SOURCE=DESTINATION` (repeatable).
    #[arg(long = "copy", value_name = "SOURCE=DESTINATION")]
    copies: Vec<String>,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = args.threads {
        rt.worker_threads(n);
    }
    rt.enable_all().build()?.block_on(async {
        let mut builder = fake_ollama::FakeOllama::builder();
        for copy in &args.copies {
            let Some((source, destination)) = copy.split_once('=') else {
                return Err(std::io::Error::other(format!(
                    "--copy {copy}: expected SOURCE=DESTINATION"
                )));
            };
            builder = builder.copy(source, destination);
        }
        let fake = builder
            .listen(args.listen)
            .slow_ms(args.slow_ms)
            .chunk_delay(Duration::from_millis(args.chunk_delay_ms))
            .record(!args.no_record)
            .try_start()
            .await?;
        eprintln!(
            "fake-ollama {} listening on {}",
            fake_ollama::OLLAMA_VERSION,
            fake.url()
        );
        tokio::signal::ctrl_c().await?;
        fake.shutdown().await;
        Ok(())
    })
}
