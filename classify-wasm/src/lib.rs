//! The dispatch-dash rule engine.
//!
//! A snapshot of a namespace (or a kubectl dump) goes in; one [`Observation`]
//! per object comes out, and on request an [`Explanation`] of each, rule by
//! rule. `../shared/spec/CLASSIFICATION.md` is the contract; section numbers in
//! comments refer to it.
//!
//! The engine does no IO, reads no clock, has no randomness and never panics
//! on input: bad input is an [`InputError`] naming a line and a column. It
//! builds natively and for `wasm32-unknown-unknown` from the same source, with
//! no wasm dependency: the JS boundary is its own crate, `bindings/wasm`
//! (`classify-wasm-bindings`).

#![forbid(unsafe_code)]
// "Never panics on input" is enforced, not only tested: no unwrap, expect,
// indexing or panic outside the tests.
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

mod classify;
mod convert;
pub mod fields;
pub mod hash;
pub mod link;
pub mod live;
mod model;
mod observation;
pub mod quantity;
pub mod queue;
pub mod schema;
mod snapshot;
mod snapshot_writer;
mod source;
mod time;
mod trace;
mod tree;
pub mod wire;

pub use classify::{counter, job_and_submission};
pub use convert::dump_to_json;
pub use link::{Link, LinkFields, LinkedObject, Linker, Links, Role};
pub use live::{ItemKey, LiveSnapshot, Reclassified};
pub use observation::{
    Cause, CauseKind, Execution, ObjectRef, Observation, OrderKey, Provenance, State,
};
pub use snapshot::{Mode, Options, READ_KINDS};
pub use snapshot_writer::{write_json_string, Piece, SnapshotPieces, SnapshotWriter};
pub use source::Position;
pub use time::Time;
pub use trace::{
    explanations_text, printable, AttemptTrace, ExecutionPod, ExecutionTrace, Explanation,
    FindingSource, FindingTrace, NoteTrace, RuleTrace, Trace, Verdict,
};
#[cfg(not(target_arch = "wasm32"))]
pub use tree::{Arenas, ReadAt, Unstreamed};

/// The label and annotation keys of section 1.
pub mod keys {
    pub use crate::fields::{
        ADMISSION, ADMISSION_GATED_BY, HOLD_INSTANCE, JOBSET_NAME, JOB_ID, JOB_UID, OPEN_GATE,
        QUEUE_NAME, RESTART_ATTEMPT, SUBMISSION,
    };
}

/// Input that is not a snapshot or dump, with the position of the offending
/// value. Displays as `<line>:<column>: <what is wrong>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{position}: {message}")]
pub struct InputError {
    pub position: Position,
    pub message: String,
}

impl From<tree::SyntaxError> for InputError {
    fn from(e: tree::SyntaxError) -> Self {
        InputError {
            position: e.position,
            message: e.message,
        }
    }
}

/// Checks that the input is UTF-8 text, naming the first byte that is not.
pub fn as_text(input: &[u8]) -> Result<&str, InputError> {
    std::str::from_utf8(input).map_err(|e| InputError {
        position: source::utf8_error_position(input, e.valid_up_to()),
        message: "the input is not UTF-8 text".to_string(),
    })
}

/// An input parsed once (JSON or YAML, positions kept), to classify with
/// different options or to time the rules apart from the parser.
pub struct Parsed<'a> {
    documents: tree::Documents<'a>,
    /// Made by [`Parsed::new_on_two_threads`]: read the views and classify
    /// the TrainJobs on two too (never in wasm, where that constructor does
    /// not exist).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    two_threads: bool,
}

impl<'a> Parsed<'a> {
    pub fn new(input: &'a str) -> Result<Self, InputError> {
        Ok(Parsed {
            documents: tree::parse(input)?,
            two_threads: false,
        })
    }

    /// [`Parsed::new`], with the items of a big JSON List parsed by two
    /// threads: the same tree, or the same error, in less time on a machine
    /// with a core to spare (the CLI's case). Not in wasm, which has no
    /// threads.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new_on_two_threads(input: &'a str) -> Result<Self, InputError> {
        Ok(Parsed {
            documents: tree::parse_on_two_threads(input)?,
            two_threads: true,
        })
    }

    /// How many threads classify: two when made by
    /// [`Parsed::new_on_two_threads`].
    fn threads(&self) -> classify::Threads {
        #[cfg(not(target_arch = "wasm32"))]
        if self.two_threads {
            return classify::Threads::Two;
        }
        classify::Threads::One
    }

    fn snapshot(&self, options: Options) -> Result<snapshot::Snapshot<'_>, InputError> {
        #[cfg(not(target_arch = "wasm32"))]
        if self.two_threads {
            return snapshot::Snapshot::read_on_two_threads(&self.documents, options);
        }
        snapshot::Snapshot::read(&self.documents, options)
    }

    /// Reads the typed views (checking every type) and applies the rules.
    pub fn classify(&self, options: Options) -> Result<Vec<Observation>, InputError> {
        let snap = self.snapshot(options)?;
        Ok(classify::classify(&snap, self.threads()))
    }

    pub fn explain(&self, options: Options) -> Result<Vec<Explanation>, InputError> {
        let snap = self.snapshot(options)?;
        Ok(classify::explain(&snap, self.threads()))
    }

    /// [`Parsed::explain`], with the mode the input was classified in
    /// (set, declared or inferred, section 2): a part of the input that
    /// states it is explained as the whole explains it, even when the part
    /// alone would infer another (the offline page's worker sends the page
    /// one job's objects so).
    pub fn explain_in_mode(
        &self,
        options: Options,
    ) -> Result<(Vec<Explanation>, Mode), InputError> {
        let snap = self.snapshot(options)?;
        Ok((classify::explain(&snap, self.threads()), snap.mode))
    }

    pub fn classify_with_attempts(&self, options: Options) -> Result<Vec<Attempted>, InputError> {
        let snap = self.snapshot(options)?;
        Ok(classify::classify_with_attempts(&snap, self.threads())
            .into_iter()
            .map(|(observation, attempts)| Attempted {
                observation,
                attempts,
            })
            .collect())
    }
}

/// A big JSON dump read piece by piece from a file rather than whole
/// (natively, for the CLI): only a window of the input is in memory at a
/// time, and the strings the rules read are copied out of it into
/// [`Arenas`]. What it classifies is what [`Parsed::new_on_two_threads`]
/// classifies for the same text, but an error found reading it has no
/// position: every method gives [`Unstreamed`] instead, and the caller parses
/// the whole input to name the error.
#[cfg(not(target_arch = "wasm32"))]
pub struct Streamed<'b>(Parsed<'b>);

#[cfg(not(target_arch = "wasm32"))]
impl<'b> Streamed<'b> {
    /// Reads `input` (about `len` bytes: where reading ends is where
    /// `input` says). Unstreamed when it has an error, could not be read, or
    /// is not a JSON object with an `items` array (a List or a Snapshot).
    pub fn new(input: &dyn ReadAt, len: u64, arenas: &'b mut Arenas) -> Result<Self, Unstreamed> {
        Ok(Streamed(Parsed {
            documents: tree::parse_streamed(input, len, arenas)?,
            two_threads: true,
        }))
    }

    /// [`Parsed::classify`].
    pub fn classify(&self, options: Options) -> Result<Vec<Observation>, Unstreamed> {
        self.0.classify(options).map_err(|_| Unstreamed)
    }

    /// [`Parsed::explain`].
    pub fn explain(&self, options: Options) -> Result<Vec<Explanation>, Unstreamed> {
        self.0.explain(options).map_err(|_| Unstreamed)
    }

    /// [`Parsed::classify_with_attempts`].
    pub fn classify_with_attempts(&self, options: Options) -> Result<Vec<Attempted>, Unstreamed> {
        self.0
            .classify_with_attempts(options)
            .map_err(|_| Unstreamed)
    }
}

/// An observation with its trace's `attempts` (every execution of a TrainJob,
/// newest first, each with its own section-7 cause), without the rest of the
/// trace: what a table of many objects needs. As JSON,
/// `{"observation":…,"attempts":[…]}` (see [`classified_rows_json`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Attempted {
    pub observation: Observation,
    pub attempts: Vec<AttemptTrace>,
}

/// Classifies, and gives each observation its attempts; the observations are
/// exactly [`classify`]'s.
pub fn classify_with_attempts(input: &str, options: Options) -> Result<Vec<Attempted>, InputError> {
    Parsed::new(input)?.classify_with_attempts(options)
}

/// [`classify_with_attempts`] written as one line of JSON, an array of
/// [`Attempted`] in the engine's order: the dashboard stream's `rows` event,
/// which the page draws before it has classified the snapshot itself
/// (`classify --output attempts-json` prints the same values, indented).
/// Read back with [`wire::read_rows`].
pub fn classified_rows_json(input: &str, options: Options) -> Result<String, InputError> {
    let rows = classify_with_attempts(input, options)?;
    // Only strings, numbers, booleans and derived structs: nothing that
    // serde_json can refuse to write.
    Ok(serde_json::to_string(&rows).unwrap_or_default())
}

/// Classifies a snapshot or a kubectl dump (JSON or YAML).
pub fn classify(input: &str, options: Options) -> Result<Vec<Observation>, InputError> {
    Parsed::new(input)?.classify(options)
}

/// Classifies and explains every observation.
pub fn explain(input: &str, options: Options) -> Result<Vec<Explanation>, InputError> {
    Parsed::new(input)?.explain(options)
}

/// [`classify`] on bytes, for callers that have not checked for UTF-8.
pub fn classify_bytes(input: &[u8], options: Options) -> Result<Vec<Observation>, InputError> {
    classify(as_text(input)?, options)
}

/// [`explain`] on bytes.
pub fn explain_bytes(input: &[u8], options: Options) -> Result<Vec<Explanation>, InputError> {
    explain(as_text(input)?, options)
}
