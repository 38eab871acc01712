//! `strata.Keyspace`: the dict-like read and write methods, which `Db`
//! inherits (a `Db` is its default keyspace), and the reads a `Snapshot`
//! shares with it.

use std::sync::Arc;

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use strata::{ReadOptions, WriteOptions};

use crate::bytes::{buf, opt_buf, py_bytes};
use crate::core::Core;
use crate::iter::{bounded, bounds, Items, RawIterator, Yield};
use crate::stats::stats_dict;

/// A keyspace of an open database.
#[pyclass(subclass, frozen, module = "strata")]
pub struct Keyspace {
    pub core: Arc<Core>,
    pub ks: strata::Keyspace,
}

fn wo(sync: bool) -> WriteOptions {
    WriteOptions::default().with_sync(sync)
}

/// `key`'s value in `ks` as `ro` reads it.
pub fn get<'py>(
    py: Python<'py>,
    core: &Core,
    ks: &strata::Keyspace,
    key: &Bound<'_, PyAny>,
    ro: &ReadOptions,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let key = buf(key, "key")?;
    let v = core.run(py, |_| ks.get_pinned_opt(key, ro))?;
    Ok(v.map(|v| py_bytes(py, &v)))
}

/// `get`, `KeyError` if absent (`d[key]`).
pub fn get_item<'py>(
    py: Python<'py>,
    core: &Core,
    ks: &strata::Keyspace,
    key: &Bound<'_, PyAny>,
    ro: &ReadOptions,
) -> PyResult<Bound<'py, PyBytes>> {
    get(py, core, ks, key, ro)?.ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
}

/// An `items`/`keys`/`values` iterator.
#[allow(clippy::too_many_arguments)]
pub fn items(
    py: Python<'_>,
    core: &Arc<Core>,
    ks: &strata::Keyspace,
    ro: ReadOptions,
    start: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    prefix: Option<&Bound<'_, PyAny>>,
    reverse: bool,
    what: Yield,
) -> PyResult<Items> {
    let range = bounds(opt_buf(start, "start")?, opt_buf(end, "end")?, opt_buf(prefix, "prefix")?);
    Items::new(py, core.clone(), ks, ro, range, what, reverse)
}

/// A raw iterator over `[start, end)`.
pub fn raw_iterator(
    py: Python<'_>,
    core: &Arc<Core>,
    ks: &strata::Keyspace,
    ro: ReadOptions,
    start: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
) -> PyResult<RawIterator> {
    let lower = opt_buf(start, "start")?.map(|b| b.as_ref().to_vec());
    let upper = opt_buf(end, "end")?.map(|b| b.as_ref().to_vec());
    RawIterator::new(py, core.clone(), ks, bounded(ro, lower, upper))
}

#[pymethods]
impl Keyspace {
    #[getter]
    fn name(&self) -> String {
        self.ks.name().to_string()
    }

    fn __repr__(&self) -> String {
        format!("<strata.Keyspace {:?} of {}>", self.ks.name(), self.core.path.display())
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        get_item(py, &self.core, &self.ks, key, &ReadOptions::default())
    }

    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(py, key, value, false)
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(py, key, false)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(get(py, &self.core, &self.ks, key, &ReadOptions::default())?.is_some())
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<Items> {
        items(py, &self.core, &self.ks, ReadOptions::default(), None, None, None, false, Yield::Keys)
    }

    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let v = get(py, &self.core, &self.ks, key, &ReadOptions::default())?;
        Ok(v.map(Bound::into_any).or(default))
    }

    #[pyo3(signature = (key, value, *, sync=false))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        let (key, value) = (buf(key, "key")?, buf(value, "value")?);
        self.core.run(py, |_| self.ks.put_opt(key, value, &wo(sync)))
    }

    #[pyo3(signature = (key, *, sync=false))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: bool) -> PyResult<()> {
        let key = buf(key, "key")?;
        self.core.run(py, |_| self.ks.delete_opt(key, &wo(sync)))
    }

    #[pyo3(signature = (start, end, *, sync=false))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        let (start, end) = (buf(start, "start")?, buf(end, "end")?);
        self.core.run(py, |_| self.ks.delete_range_opt(start, end, &wo(sync)))
    }

    #[pyo3(signature = (key, operand, *, sync=false))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        let (key, operand) = (buf(key, "key")?, buf(operand, "operand")?);
        self.core.run(py, |_| self.ks.merge_opt(key, operand, &wo(sync)))
    }

    #[pyo3(signature = (start=None, end=None, prefix=None, reverse=false))]
    fn items(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<Items> {
        items(py, &self.core, &self.ks, ReadOptions::default(), start, end, prefix, reverse, Yield::Items)
    }

    #[pyo3(signature = (start=None, end=None, prefix=None, reverse=false))]
    fn keys(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<Items> {
        items(py, &self.core, &self.ks, ReadOptions::default(), start, end, prefix, reverse, Yield::Keys)
    }

    #[pyo3(signature = (start=None, end=None, prefix=None, reverse=false))]
    fn values(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<Items> {
        items(py, &self.core, &self.ks, ReadOptions::default(), start, end, prefix, reverse, Yield::Values)
    }

    #[pyo3(signature = (start=None, end=None))]
    fn iterator(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<RawIterator> {
        raw_iterator(py, &self.core, &self.ks, ReadOptions::default(), start, end)
    }

    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.core.run(py, |_| self.ks.flush())
    }

    #[pyo3(signature = (start=None, end=None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let (start, end) = (opt_buf(start, "start")?, opt_buf(end, "end")?);
        self.core.run(py, |_| {
            self.ks.compact_range(start.as_ref().map(AsRef::as_ref), end.as_ref().map(AsRef::as_ref))
        })
    }

    fn wait_for_compactions(&self, py: Python<'_>) -> PyResult<()> {
        self.core.run(py, |_| self.ks.wait_for_compactions())
    }

    fn property(&self, py: Python<'_>, name: &str) -> PyResult<Option<String>> {
        self.core.run(py, |_| {
            if !self.ks.property_names().iter().any(|n| n == name) {
                return Ok(None);
            }
            self.ks.property(name).map(Some)
        })
    }

    fn property_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.core.run(py, |_| Ok(self.ks.property_names()))
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.core.run(py, |_| Ok(self.ks.stats()))?;
        stats_dict(py, &s)
    }
}
