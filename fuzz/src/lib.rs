//! Fuzz target bodies for Strata, shared by the cargo-fuzz binaries in
//! `fuzz/fuzz_targets/` and by `crates/strata/tests/fuzz_corpus.rs`, which
//! includes this file with `#[path]` and replays every committed corpus file.
//! Each `run` panics only on a real defect: a decoder panic, a non-terminating
//! iterator, a wrong value or a broken invariant.
//!
//! Paths here are relative (`super::`), never `crate::`, so the file works both
//! as a crate root and as a module of the test crate.

pub mod block;
pub mod input;
pub mod manifest;
pub mod mem;
pub mod ops;
pub mod table;
pub mod wal;

/// A target's body.
pub type Body = fn(&[u8]);

/// The targets, by the name of their cargo-fuzz binary and corpus directory.
pub const TARGETS: &[(&str, Body)] = &[
    ("block", block::run),
    ("table", table::run),
    ("wal", wal::run),
    ("manifest", manifest::run),
    ("ops", ops::run),
];
