//! `strata.WriteBatch`: writes committed together, in any keyspaces of one
//! database.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::bytes::buf;
use crate::core::Core;
use crate::errors::InvalidArgumentError;
use crate::keyspace::Keyspace;

#[derive(Default)]
struct State {
    /// INVARIANT: `None` once written (or dropped by a failing `with` block).
    batch: Option<strata::WriteBatch>,
    /// The database of the keyspaces named so far: a batch writes to one.
    core: Option<Arc<Core>>,
}

/// A batch of writes. Never locked across a call that releases the GIL.
#[pyclass(frozen, module = "strata")]
pub struct WriteBatch {
    state: Mutex<State>,
    /// Where leaving a `with` block commits it (`Db.write_batch`), and whether synced.
    target: Option<(Arc<Core>, bool)>,
}

impl WriteBatch {
    pub fn for_db(core: Arc<Core>, sync: bool) -> WriteBatch {
        let state = State { batch: Some(strata::WriteBatch::new()), core: Some(core.clone()) };
        WriteBatch { state: Mutex::new(state), target: Some((core, sync)) }
    }

    /// Takes the batch out to write it to the database of `core`.
    pub fn take(&self, core: &Arc<Core>) -> PyResult<strata::WriteBatch> {
        let mut st = self.state.lock();
        if st.core.as_ref().is_some_and(|c| !Arc::ptr_eq(c, core)) {
            return Err(InvalidArgumentError::new_err("the batch names keyspaces of another database"));
        }
        st.batch.take().ok_or_else(written)
    }

    /// Runs `f` on the batch, with the keyspace `ks` (if any) checked to
    /// belong to the batch's database.
    fn op(
        &self,
        ks: Option<&Bound<'_, Keyspace>>,
        f: impl FnOnce(&mut strata::WriteBatch, Option<&strata::Keyspace>),
    ) -> PyResult<()> {
        let mut st = self.state.lock();
        let st = &mut *st;
        let ks = ks.map(Bound::get);
        if let Some(ks) = ks {
            match &st.core {
                Some(c) if !Arc::ptr_eq(c, &ks.core) => {
                    return Err(InvalidArgumentError::new_err(
                        "the keyspace belongs to another database than the batch",
                    ))
                }
                Some(_) => {}
                None => st.core = Some(ks.core.clone()),
            }
        }
        let batch = st.batch.as_mut().ok_or_else(written)?;
        f(batch, ks.map(|k| &k.ks));
        Ok(())
    }
}

fn written() -> PyErr {
    InvalidArgumentError::new_err("the batch was already written (or dropped by its with block)")
}

#[pymethods]
impl WriteBatch {
    #[new]
    fn new() -> WriteBatch {
        let state = State { batch: Some(strata::WriteBatch::new()), core: None };
        WriteBatch { state: Mutex::new(state), target: None }
    }

    #[pyo3(signature = (key, value, *, keyspace=None))]
    fn put(
        &self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, Keyspace>>,
    ) -> PyResult<()> {
        let (key, value) = (buf(key, "key")?, buf(value, "value")?);
        self.op(keyspace, |b, ks| match ks {
            Some(ks) => b.put_cf(ks, key, value),
            None => b.put(key, value),
        })
    }

    #[pyo3(signature = (key, *, keyspace=None))]
    fn delete(&self, key: &Bound<'_, PyAny>, keyspace: Option<&Bound<'_, Keyspace>>) -> PyResult<()> {
        let key = buf(key, "key")?;
        self.op(keyspace, |b, ks| match ks {
            Some(ks) => b.delete_cf(ks, key),
            None => b.delete(key),
        })
    }

    #[pyo3(signature = (start, end, *, keyspace=None))]
    fn delete_range(
        &self,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, Keyspace>>,
    ) -> PyResult<()> {
        let (start, end) = (buf(start, "start")?, buf(end, "end")?);
        self.op(keyspace, |b, ks| match ks {
            Some(ks) => b.delete_range_cf(ks, start, end),
            None => b.delete_range(start, end),
        })
    }

    #[pyo3(signature = (key, operand, *, keyspace=None))]
    fn merge(
        &self,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, Keyspace>>,
    ) -> PyResult<()> {
        let (key, operand) = (buf(key, "key")?, buf(operand, "operand")?);
        self.op(keyspace, |b, ks| match ks {
            Some(ks) => b.merge_cf(ks, key, operand),
            None => b.merge(key, operand),
        })
    }

    fn clear(&self) -> PyResult<()> {
        self.op(None, |b, _| b.clear())
    }

    fn __len__(&self) -> usize {
        self.state.lock().batch.as_ref().map_or(0, strata::WriteBatch::len)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Commits on a clean exit (a batch from `Db.write_batch`), drops the
    /// batch on an exception, which propagates.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyType>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let batch = self.state.lock().batch.take();
        match (exc_type, &self.target, batch) {
            (None, Some((core, sync)), Some(batch)) => {
                let wo = strata::WriteOptions::default().with_sync(*sync);
                core.run(py, |db| db.write_opt(batch, &wo))?;
            }
            (None, None, Some(_)) => return Err(InvalidArgumentError::new_err(
                "a WriteBatch() used as a context manager is not committed: use `with db.write_batch()`, \
                     or call db.write(batch)",
            )),
            _ => {}
        }
        Ok(false)
    }
}
