//! The `dispatch-dash` binary's library: one module per subcommand, so that
//! tests drive the same code the binary runs.

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

pub mod assets;
pub mod classify_cmd;
pub mod serve;
