//! `dispatch-dash`: the command line. Each subcommand lives in its own module
//! of the library; this file only parses arguments and maps errors to exit
//! codes. It is the one place `anyhow` is used.
//!
//! Exit codes: 0 success; 2 bad usage or configuration, refused before
//! anything runs (clap's errors, `classify`'s bad input, and `serve`'s
//! start-up refusals: `--auth none` exposed without
//! `--allow-unauthenticated`, an empty or unusable token, conflicting auth
//! flags, a server identity without `system:auth-delegator`); 1 anything
//! else (the cluster unreachable, a worker that stopped), which a
//! Deployment answers with a restart.

#![forbid(unsafe_code)]
// No unwrap, expect, panic or unchecked indexing outside the tests, as in
// the engine: a bad object, request or frame is an error, not a crash. The
// few sites that cannot fail carry an `allow` that says why.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic,
        clippy::too_many_lines
    )
)]

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
                Err(e) => {
                    let code = serve_exit_code(&e);
                    report(anyhow::Error::new(e).context("dispatch-dash serve"));
                    ExitCode::from(code)
                }
            }
        }
    }
}

/// Reports an unexpected failure (not bad input) and exits 1.
fn fail(e: anyhow::Error) -> ExitCode {
    report(e);
    ExitCode::FAILURE
}

fn report(e: anyhow::Error) {
    eprintln!("error: {e:#}");
}

/// 2 for a configuration `serve` refuses at start-up (retrying cannot help:
/// the operator must change a flag or a binding), 1 for everything else.
fn serve_exit_code(e: &serve::Error) -> u8 {
    use dispatch_dash::serve::auth;
    match e {
        serve::Error::AuthFlags(_)
        | serve::Error::Unauthenticated(_)
        | serve::Error::Plaintext(_)
        | serve::Error::EmptyToken
        | serve::Error::BadToken
        | serve::Error::TokenFile { .. }
        | serve::Error::Auth(auth::Error::MissingDelegation { .. })
        // A state directory that cannot be used (corrupt, locked, newer).
        | serve::Error::State(_)
        // A certificate or key that does not load.
        | serve::Error::Tls(_)
        | serve::Error::DemoUsers(_) => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_of_a_configuration_exit_2_and_a_stopped_worker_1() {
        let refused = [
            serve::Error::EmptyToken,
            serve::Error::BadToken,
            serve::Error::AuthFlags("--auth token needs a token"),
            serve::Error::Unauthenticated("0.0.0.0:8080".parse().expect("addr")),
            serve::Error::Plaintext("0.0.0.0:8080".parse().expect("addr")),
            serve::Error::Auth(serve::auth::Error::MissingDelegation {
                missing: "tokenreviews.authentication.k8s.io".into(),
            }),
        ];
        for e in &refused {
            assert_eq!(serve_exit_code(e), 2, "{e}");
        }
        let failed = [
            serve::Error::WorkerEnded(serve::WorkerEnd {
                name: "watch Pod in team-a".into(),
                panicked: false,
            }),
            serve::Error::Auth(serve::auth::Error::NoStatus),
            serve::Error::Io(std::io::Error::other("bind failed")),
        ];
        for e in &failed {
            assert_eq!(serve_exit_code(e), 1, "{e}");
        }
    }
}
