//! `strata.open`, `strata.Db` (the database: its default keyspace plus
//! what spans keyspaces), `strata.repair` and `strata.destroy`.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use strata::merge_operators::{builtin_merge_operator, recorded_merge_operators};
use strata::{KeyspaceOptions, Options};

use crate::batch::WriteBatch;
use crate::core::Core;
use crate::errors::{to_py, InvalidArgumentError};
use crate::keyspace::Keyspace;
use crate::options::{db_options, keyspace_options, policy};
use crate::snapshot::Snapshot;

/// An open database; it is its default keyspace.
#[pyclass(extends = Keyspace, frozen, module = "strata")]
pub struct Db {}

/// `options` with the merge operators the database at `path` records, where
/// the engine ships them, so a reopen needs no `merge_operator` option.
fn with_recorded_merge_operators(path: &std::path::Path, mut o: Options) -> Options {
    if !path.join("CURRENT").exists() {
        return o;
    }
    // A MANIFEST that cannot be read is reported by the open itself.
    for (ks, name) in recorded_merge_operators(path, &o).unwrap_or_default() {
        let Some(op) = builtin_merge_operator(&name) else { continue };
        o = if ks == "default" {
            o.with_merge_operator(op)
        } else {
            o.with_keyspace(ks, KeyspaceOptions::default().with_merge_operator(op))
        };
    }
    o
}

/// Opens (or creates) the database in `path`; see the type stub.
#[pyfunction]
#[pyo3(signature = (path, *, create_if_missing=true, policy=None, options=None, read_only=false))]
pub fn open<'py>(
    py: Python<'py>,
    path: PathBuf,
    create_if_missing: bool,
    policy: Option<&str>,
    options: Option<&Bound<'_, PyDict>>,
    read_only: bool,
) -> PyResult<Bound<'py, Db>> {
    let mut o = Options::default().with_create_if_missing(create_if_missing);
    o = with_recorded_merge_operators(&path, o);
    o = db_options(o, options)?;
    if let Some(style) = self::policy(policy)? {
        o = o.with_compaction_style(style);
    }
    let db = py
        .detach(|| if read_only { strata::Db::open_read_only(&path, o) } else { strata::Db::open(&path, o) })
        .map_err(to_py)?;
    let ks = db.default_keyspace();
    let core = Arc::new(Core::new(db, path));
    Bound::new(py, PyClassInitializer::from(Keyspace { core, ks }).add_subclass(Db {}))
}

fn base<'a>(slf: &'a Bound<'_, Db>) -> &'a Keyspace {
    slf.as_super().get()
}

fn keyspace(core: &Arc<Core>, ks: strata::Keyspace) -> Keyspace {
    Keyspace { core: core.clone(), ks }
}

#[pymethods]
impl Db {
    #[getter]
    fn path(slf: &Bound<'_, Self>) -> String {
        base(slf).core.path.to_string_lossy().into_owned()
    }

    #[getter]
    fn closed(slf: &Bound<'_, Self>) -> bool {
        base(slf).core.is_closed()
    }

    fn __repr__(slf: &Bound<'_, Self>) -> String {
        let core = &base(slf).core;
        let state = if core.is_closed() { " (closed)" } else { "" };
        format!("<strata.Db {}{state}>", core.path.display())
    }

    fn close(slf: &Bound<'_, Self>) -> PyResult<()> {
        base(slf).core.close(slf.py())
    }

    fn __enter__<'a, 'py>(slf: &'a Bound<'py, Self>) -> &'a Bound<'py, Self> {
        slf
    }

    fn __exit__(
        slf: &Bound<'_, Self>,
        _exc_type: Option<&Bound<'_, PyType>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        Self::close(slf)?;
        Ok(false)
    }

    #[pyo3(signature = (*, sync=false))]
    fn write_batch(slf: &Bound<'_, Self>, sync: bool) -> WriteBatch {
        WriteBatch::for_db(base(slf).core.clone(), sync)
    }

    #[pyo3(signature = (batch, *, sync=false))]
    fn write(slf: &Bound<'_, Self>, batch: &Bound<'_, WriteBatch>, sync: bool) -> PyResult<()> {
        let core = &base(slf).core;
        let batch = batch.get().take(core)?;
        let wo = strata::WriteOptions::default().with_sync(sync);
        core.run(slf.py(), |db| db.write_opt(batch, &wo))
    }

    fn snapshot(slf: &Bound<'_, Self>) -> PyResult<Snapshot> {
        let b = base(slf);
        let snap = b.core.run(slf.py(), |db| Ok(db.snapshot()))?;
        Ok(Snapshot::new(b.core.clone(), b.ks.clone(), snap))
    }

    #[pyo3(signature = (name, *, policy=None))]
    fn keyspace(slf: &Bound<'_, Self>, name: &str, policy: Option<&str>) -> PyResult<Keyspace> {
        let core = &base(slf).core;
        let style = self::policy(policy)?;
        let ks = core.run(slf.py(), |db| match db.keyspace(name) {
            Err(strata::Error::KeyspaceNotFound(_)) => {
                let opts = KeyspaceOptions::default();
                db.create_keyspace(
                    name,
                    style.clone().map_or(opts.clone(), |s| opts.with_compaction_style(s)),
                )
            }
            r => r,
        })?;
        if let Some(style) = style {
            let has = core.run(slf.py(), |_| ks.property("strata.policy"))?;
            if has != style.name() {
                return Err(InvalidArgumentError::new_err(format!(
                    "keyspace {name:?} has the policy {has:?}, not {:?}",
                    style.name()
                )));
            }
        }
        Ok(keyspace(core, ks))
    }

    #[pyo3(signature = (name, *, policy=None, options=None))]
    fn create_keyspace(
        slf: &Bound<'_, Self>,
        name: &str,
        policy: Option<&str>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Keyspace> {
        let core = &base(slf).core;
        let mut opts = keyspace_options(KeyspaceOptions::default(), options)?;
        if let Some(style) = self::policy(policy)? {
            opts = opts.with_compaction_style(style);
        }
        let ks = core.run(slf.py(), |db| db.create_keyspace(name, opts))?;
        Ok(keyspace(core, ks))
    }

    fn drop_keyspace(slf: &Bound<'_, Self>, name: &str) -> PyResult<()> {
        base(slf).core.run(slf.py(), |db| db.drop_keyspace(name))
    }

    fn list_keyspaces(slf: &Bound<'_, Self>) -> PyResult<Vec<String>> {
        base(slf).core.run(slf.py(), |db| Ok(db.list_keyspaces()))
    }

    fn checkpoint(slf: &Bound<'_, Self>, dest: PathBuf) -> PyResult<()> {
        base(slf).core.run(slf.py(), |db| db.checkpoint(&dest))
    }
}

/// Rebuilds the MANIFEST of a damaged database; returns what it found.
#[pyfunction]
pub fn repair<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let r = py.detach(|| strata::repair(&path, Options::default())).map_err(to_py)?;
    let d = PyDict::new(py);
    d.set_item("tables_scanned", r.tables_scanned)?;
    d.set_item("tables_intact", r.tables_intact)?;
    d.set_item("tables_damaged", r.tables_damaged)?;
    d.set_item("tables_lost", r.tables_lost)?;
    d.set_item("blocks_lost", r.blocks_lost)?;
    d.set_item("tables_superseded", r.tables_superseded)?;
    d.set_item("wal_files", r.wal_files)?;
    d.set_item("wal_records", r.wal_records)?;
    d.set_item("wal_bytes_dropped", r.wal_bytes_dropped)?;
    Ok(d)
}

/// Deletes the database in `path`.
#[pyfunction]
pub fn destroy(py: Python<'_>, path: PathBuf) -> PyResult<()> {
    py.detach(|| strata::destroy(&path, Options::default())).map_err(to_py)
}
