//! cargo-fuzz target: see `strata_fuzz::block`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::block::run(data));
