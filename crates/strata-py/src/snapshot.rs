//! `strata.Snapshot`: a read view of every keyspace of one database.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};
use strata::ReadOptions;

use crate::core::Core;
use crate::errors::{ClosedError, InvalidArgumentError};
use crate::iter::{Items, RawIterator, Yield};
use crate::keyspace::{get, get_item, items, raw_iterator, Keyspace};

/// A snapshot. Its lock is never held across a call that releases the GIL.
#[pyclass(frozen, module = "strata")]
pub struct Snapshot {
    core: Arc<Core>,
    default: strata::Keyspace,
    /// INVARIANT: `None` once released.
    snap: Mutex<Option<strata::Snapshot>>,
}

impl Snapshot {
    pub fn new(core: Arc<Core>, default: strata::Keyspace, snap: strata::Snapshot) -> Snapshot {
        Snapshot { core, default, snap: Mutex::new(Some(snap)) }
    }

    /// Read options at the snapshot, and the keyspace to read (`None`: the default one).
    fn at<'a>(
        &'a self,
        ks: Option<&'a Bound<'_, Keyspace>>,
    ) -> PyResult<(ReadOptions, &'a strata::Keyspace)> {
        if self.core.is_closed() {
            return Err(crate::errors::closed());
        }
        let ro = match self.snap.lock().as_ref() {
            Some(s) => ReadOptions::default().with_snapshot(s),
            None => return Err(ClosedError::new_err("the snapshot was released")),
        };
        let ks = match ks.map(Bound::get) {
            Some(k) if !Arc::ptr_eq(&k.core, &self.core) => {
                return Err(InvalidArgumentError::new_err("the keyspace belongs to another database"))
            }
            Some(k) => &k.ks,
            None => &self.default,
        };
        Ok((ro, ks))
    }
}

#[pymethods]
impl Snapshot {
    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &self,
        _exc_type: Option<&Bound<'_, PyType>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.release();
        false
    }

    fn release(&self) {
        let snap = self.snap.lock().take();
        drop(snap);
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let (ro, ks) = self.at(None)?;
        get_item(py, &self.core, ks, key, &ro)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let (ro, ks) = self.at(None)?;
        Ok(get(py, &self.core, ks, key, &ro)?.is_some())
    }

    #[pyo3(signature = (key, default=None, *, keyspace=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
        default: Option<Bound<'py, PyAny>>,
        keyspace: Option<&Bound<'_, Keyspace>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let (ro, ks) = self.at(keyspace)?;
        Ok(get(py, &self.core, ks, key, &ro)?.map(Bound::into_any).or(default))
    }

    #[pyo3(signature = (start=None, end=None, prefix=None, reverse=false, *, keyspace=None))]
    fn items(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        keyspace: Option<&Bound<'_, Keyspace>>,
    ) -> PyResult<Items> {
        let (ro, ks) = self.at(keyspace)?;
        items(py, &self.core, ks, ro, start, end, prefix, reverse, Yield::Items)
    }

    #[pyo3(signature = (start=None, end=None, prefix=None, reverse=false, *, keyspace=None))]
    fn keys(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        keyspace: Option<&Bound<'_, Keyspace>>,
    ) -> PyResult<Items> {
        let (ro, ks) = self.at(keyspace)?;
        items(py, &self.core, ks, ro, start, end, prefix, reverse, Yield::Keys)
    }

    #[pyo3(signature = (start=None, end=None, prefix=None, reverse=false, *, keyspace=None))]
    fn values(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        keyspace: Option<&Bound<'_, Keyspace>>,
    ) -> PyResult<Items> {
        let (ro, ks) = self.at(keyspace)?;
        items(py, &self.core, ks, ro, start, end, prefix, reverse, Yield::Values)
    }

    #[pyo3(signature = (start=None, end=None, *, keyspace=None))]
    fn iterator(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        keyspace: Option<&Bound<'_, Keyspace>>,
    ) -> PyResult<RawIterator> {
        let (ro, ks) = self.at(keyspace)?;
        raw_iterator(py, &self.core, ks, ro, start, end)
    }
}
