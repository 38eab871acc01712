//! cargo-fuzz target: see `strata_fuzz::wal`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::wal::run(data));
