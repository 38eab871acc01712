//! cargo-fuzz target: see `strata_fuzz::ops`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::ops::run(data));
