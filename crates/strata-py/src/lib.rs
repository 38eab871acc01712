//! `strata`, the Python module: Strata with the API plyvel and rocksdict
//! users expect. Built with maturin (`pip install crates/strata-py`); the
//! type stub `strata.pyi` documents every name.
//!
//! Every call that touches the disk releases the GIL ([`core::Core::run`]);
//! the objects a database hands out share it through an `Arc`, so they keep
//! it alive, and fail with `ClosedError` once it is closed.

mod batch;
mod bytes;
mod core;
mod db;
mod errors;
mod iter;
mod keyspace;
mod options;
mod snapshot;
mod stats;

use pyo3::prelude::*;

/// The merge operators the engine ships, by name.
pub(crate) const MERGE_OPERATORS: [&str; 3] =
    [strata::merge_operators::UINT64_ADD, strata::merge_operators::MAX, "strata.StringAppend.<separator>"];

#[pymodule]
#[pyo3(name = "strata")]
fn strata_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The engine's log lines (warnings by default) go to stderr; `STRATA_LOG`
    // sets the level as `RUST_LOG` would. Not Python's `logging`: the
    // engine logs from background threads, which must never wait for the GIL
    // (a close waits for them).
    let _ = env_logger::Builder::from_env(env_logger::Env::new().filter_or("STRATA_LOG", "warn")).try_init();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("POLICIES", strata::CompactionStyle::builtin_names().to_vec())?;
    m.add("MERGE_OPERATORS", MERGE_OPERATORS.to_vec())?;
    errors::register(m)?;
    m.add_class::<keyspace::Keyspace>()?;
    m.add_class::<db::Db>()?;
    m.add_class::<batch::WriteBatch>()?;
    m.add_class::<snapshot::Snapshot>()?;
    m.add_class::<iter::Items>()?;
    m.add_class::<iter::RawIterator>()?;
    m.add_function(wrap_pyfunction!(db::open, m)?)?;
    m.add_function(wrap_pyfunction!(db::repair, m)?)?;
    m.add_function(wrap_pyfunction!(db::destroy, m)?)?;
    Ok(())
}
