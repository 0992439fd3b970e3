//! Workspace-level tests. The Rust ones are in `tests/tests/`: they drive
//! several crates together (the emulator's scenario through the engine). The
//! browser tests are in `tests/e2e/` and run with Node (see docs/testing.md).

#![forbid(unsafe_code)]
