//! The emulator's error type.

use crate::kind::Kind;

/// Everything that can go wrong when driving the emulator through its Rust API
/// or starting its HTTP server.
///
/// HTTP clients never see this type: they get Kubernetes `Status` objects
/// instead, built by the server from the request.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The object has no `apiVersion`/`kind` pair that the emulator serves.
    #[error("unsupported object: apiVersion {api_version:?}, kind {kind:?}")]
    UnsupportedKind {
        /// The object's `apiVersion`, as given.
        api_version: String,
        /// The object's `kind`, as given.
        kind: String,
    },
    /// The object is not a JSON object, or lacks a field every object needs.
    #[error("invalid object: {0}")]
    Invalid(String),
    /// `create` of an object whose kind, namespace and name are already taken.
    #[error("{kind:?} {namespace}/{name} already exists")]
    AlreadyExists {
        /// Kind of the object.
        kind: Kind,
        /// Namespace (empty for cluster-scoped kinds).
        namespace: String,
        /// Name of the object.
        name: String,
    },
    /// `update`, `patch_status` or `delete` of an object that does not exist.
    #[error("{kind:?} {namespace}/{name} not found")]
    NotFound {
        /// Kind of the object.
        kind: Kind,
        /// Namespace (empty for cluster-scoped kinds).
        namespace: String,
        /// Name of the object.
        name: String,
    },
    /// The Workload kind was used on an emulator configured without Kueue.
    #[error("the Kueue API is not served by this emulator (kueue: false)")]
    KueueDisabled,
    /// Binding or serving the HTTP listener failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// Shorthand for results of the emulator's API.
pub type Result<T, E = Error> = std::result::Result<T, E>;
