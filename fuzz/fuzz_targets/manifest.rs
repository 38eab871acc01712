//! cargo-fuzz target: see `strata_fuzz::manifest`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::manifest::run(data));
