//! cargo-fuzz target: see `strata_fuzz::table`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::table::run(data));
