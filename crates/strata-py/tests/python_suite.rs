//! The Python bindings' pytest suite, run by `cargo test --workspace`:
//! `scripts/test-python.sh` builds the module with maturin in a virtual
//! environment (maturin, pytest and hypothesis from the Python package
//! registry) and runs `crates/strata-py/tests/test_*.py`.
//! `STRATA_SKIP_PYTHON=1` skips it, saying so (for a machine without Python).

use std::path::Path;
use std::process::Command;

#[test]
fn python_suite_passes() {
    if std::env::var_os("STRATA_SKIP_PYTHON").is_some() {
        eprintln!("the Python suite is skipped: STRATA_SKIP_PYTHON is set");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let status = Command::new("bash")
        .arg(root.join("scripts/test-python.sh"))
        .status()
        .expect("cannot run scripts/test-python.sh");
    assert!(status.success(), "the Python suite failed: {status} (rerun with scripts/test-python.sh)");
}
