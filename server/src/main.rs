//! `dispatch-dash`: the command line. Each subcommand lives in its own module
//! of the library; this file only parses arguments and maps errors to exit
//! codes. It is the one place `anyhow` is used.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dispatch_dash::classify_cmd::{self, ClassifyArgs};
use dispatch_dash::serve::{self, ServeArgs};

#[derive(Parser)]
#[command(
    name = "dispatch-dash",
    version,
    about = "See what every Kubeflow TrainJob is doing, and why."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Classify a snapshot or a kubectl dump (JSON or YAML) from a file or stdin.
    Classify(ClassifyArgs),
    /// Watch a cluster (or an embedded, simulated one) and serve
    /// classifications over HTTP and server-sent events.
    // Boxed: the serve flags are many, and the enum is parsed once.
    Serve(Box<ServeArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Classify(args) => classify_cmd::main(args),
        Command::Serve(args) => {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => return fail(anyhow::Error::new(e).context("starting the runtime")),
            };
            match runtime.block_on(serve::run(*args)) {
                Ok(()) => ExitCode::SUCCESS,
                // A state directory that cannot be used is the caller's to fix.
                Err(e @ serve::Error::State(_)) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
                Err(e) => fail(anyhow::Error::new(e).context("dispatch-dash serve")),
            }
        }
    }
}

/// Reports an unexpected failure (not bad input) and exits 1.
fn fail(e: anyhow::Error) -> ExitCode {
    eprintln!("error: {e:#}");
    ExitCode::FAILURE
}
