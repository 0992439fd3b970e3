//! An in-process Kubernetes API emulator for dispatch-dash.
//!
//! dispatch-dash reads TrainJobs, JobSets, Kueue Workloads, pods and Nodes
//! through the real `kube` client (list, watch, reflectors). To demo it
//! without a cluster, and to test it against the protocol rather than against
//! mocks of the client, this crate serves those kinds over plain HTTP with the
//! semantics the client relies on: a global resourceVersion, consistent
//! paginated lists, watches from a resourceVersion with bookmarks, `410 Gone`
//! from a bounded history, `timeoutSeconds`, label and field selectors,
//! discovery (so Kueue can be switched off, and Workloads served at
//! `v1beta2`, the deprecated `v1beta1`, or both, like Kueue's CRD), and
//! `Status` errors. Requests are counted per kind and verb, and at a
//! deprecated version, so tests can assert what a client asked for.
//! TokenReviews and SubjectAccessReviews are answered from a token map and
//! an allow list that tests change at runtime (see [`Emulator::grant`]), so
//! `--auth kubernetes` runs against it too.
//!
//! Writes happen through the Rust API ([`Emulator::create`],
//! [`Emulator::apply`], [`Emulator::delete`], ...), typically from the
//! [`scenario`] driver, which plays the part of the Trainer, JobSet, Kueue and
//! kubelet controllers.
//!
//! ```no_run
//! # async fn demo() -> Result<(), emulator::Error> {
//! use emulator::{Emulator, EmulatorConfig};
//! let emu = Emulator::new(EmulatorConfig::default());
//! let server = emu.serve("127.0.0.1:0".parse().unwrap()).await?;
//! let kubeconfig = server.kubeconfig_yaml(); // hand this to kube::Config
//! # let _ = kubeconfig; Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// No unwrap, expect, panic or unchecked indexing outside the tests, as in
// the server: a bad object, request or selector is an error, not a crash.
// The few sites that cannot fail carry an `allow` that says why.
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

mod error;
mod field;
mod kind;
mod review;
pub mod rng;
pub mod scenario;
mod selector;
mod server;
mod status;
mod store;
pub mod time;
pub mod visibility;
mod watch;

pub use error::{Error, Result};
pub use kind::Kind;
pub use review::{Grant, GrantTarget, User, OWN_IDENTITY};
pub use selector::{FieldSelector, LabelSelector};
pub use server::RunningEmulator;
pub use store::{kubeconfig_yaml, Emulator, EmulatorConfig, WorkloadVersions};
