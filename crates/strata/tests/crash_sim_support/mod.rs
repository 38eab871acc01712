//! Helpers for the crash-simulation tests (`tests/crash_sim.rs`): the expected
//! state of a crashed database and the case driver.
#![allow(dead_code)]

pub mod driver;
pub mod history;
pub mod keyspaces;
