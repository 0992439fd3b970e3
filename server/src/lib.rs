//! The `dispatch-dash` binary's library: one module per subcommand, so that
//! tests drive the same code the binary runs.

#![forbid(unsafe_code)]

pub mod assets;
pub mod classify_cmd;
pub mod serve;
