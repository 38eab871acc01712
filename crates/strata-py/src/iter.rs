//! Iterators: [`Items`] (what `items`, `keys` and `values` return) and
//! [`RawIterator`] (RocksDB's raw iterator), both over a
//! [`strata::DbRawIterator`], which hands out slices (each item is copied
//! once, into the `bytes` Python gets).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use strata::{DbRawIterator, ReadOptions};

use crate::bytes::{buf, py_bytes, Buf};
use crate::core::Core;
use crate::errors::InvalidArgumentError;

/// A key range `[lower, upper)`; `None` bounds are open.
pub type Range = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The key range `[lower, upper)` of `start`, `end` and `prefix` together
/// (`None`: the range is empty).
pub fn bounds(start: Option<Buf<'_>>, end: Option<Buf<'_>>, prefix: Option<Buf<'_>>) -> Option<Range> {
    let mut lower = start.map(|b| b.as_ref().to_vec());
    let mut upper = end.map(|b| b.as_ref().to_vec());
    if let Some(p) = prefix {
        let p = p.as_ref();
        if lower.as_deref().is_none_or(|l| l < p) {
            lower = Some(p.to_vec());
        }
        if let Some(pe) = strata::prefix_successor(p) {
            if upper.as_deref().is_none_or(|u| u > pe.as_slice()) {
                upper = Some(pe);
            }
        }
    }
    match (&lower, &upper) {
        (Some(l), Some(u)) if l >= u => None,
        _ => Some((lower, upper)),
    }
}

/// `ro` limited to `[lower, upper)`.
pub fn bounded(mut ro: ReadOptions, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> ReadOptions {
    if let Some(l) = lower {
        ro = ro.with_iterate_lower_bound(l);
    }
    if let Some(u) = upper {
        ro = ro.with_iterate_upper_bound(u);
    }
    ro
}

/// The cursor of an iterator: `None` for an empty range.
type Cursor = Mutex<Option<DbRawIterator>>;

/// Runs `step` on the cursor with the GIL released and the database held
/// open, then `read` on it with the GIL. The cursor stays locked for both,
/// so no other thread moves it in between; other threads only wait for it
/// with the GIL released (see `core`).
fn with_cursor<T>(
    py: Python<'_>,
    core: &Core,
    cursor: &Cursor,
    step: impl FnOnce(&mut DbRawIterator) -> strata::Result<()> + Send,
    read: impl FnOnce(Option<&DbRawIterator>) -> PyResult<T>,
) -> PyResult<T> {
    let guard = core.run(py, |_| {
        let mut g = cursor.lock();
        if let Some(it) = g.as_mut() {
            step(it)?;
            it.status()?;
        }
        Ok(g)
    })?;
    read(guard.as_ref())
}

/// What an [`Items`] yields.
#[derive(Clone, Copy)]
pub enum Yield {
    Items,
    Keys,
    Values,
}

/// The iterator `items()`, `keys()` and `values()` return: reads the view
/// taken when it was made.
#[pyclass(frozen, module = "strata")]
pub struct Items {
    core: Arc<Core>,
    cursor: Cursor,
    what: Yield,
    reverse: bool,
    /// Whether the cursor has been positioned (the first `__next__` seeks).
    started: AtomicBool,
}

impl Items {
    /// An iterator over `[lower, upper)` of `ks` (`range` `None`: empty).
    /// Building the iterator may open table files: done with the GIL released.
    pub fn new(
        py: Python<'_>,
        core: Arc<Core>,
        ks: &strata::Keyspace,
        ro: ReadOptions,
        range: Option<Range>,
        what: Yield,
        reverse: bool,
    ) -> PyResult<Items> {
        let it = core
            .run(py, |_| Ok(range.map(|(lower, upper)| ks.raw_iterator_opt(&bounded(ro, lower, upper)))))?;
        Ok(Items { core, cursor: Mutex::new(it), what, reverse, started: AtomicBool::new(false) })
    }
}

#[pymethods]
impl Items {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let first = !self.started.swap(true, Ordering::AcqRel);
        let reverse = self.reverse;
        let step = move |it: &mut DbRawIterator| {
            match (first, reverse) {
                (true, false) => it.seek_to_first(),
                (true, true) => it.seek_to_last(),
                // Exhausted stays exhausted.
                (false, _) if !it.valid() => {}
                (false, false) => it.next(),
                (false, true) => it.prev(),
            }
            Ok(())
        };
        let what = self.what;
        with_cursor(py, &self.core, &self.cursor, step, |it| {
            let Some((k, v)) = it.and_then(|it| it.item()) else {
                return Err(PyStopIteration::new_err(()));
            };
            Ok(match what {
                Yield::Items => PyTuple::new(py, [py_bytes(py, k), py_bytes(py, v)])?.into_any(),
                Yield::Keys => py_bytes(py, k).into_any(),
                Yield::Values => py_bytes(py, v).into_any(),
            })
        })
    }
}

/// A cursor positioned by `seek*` calls (RocksDB's raw iterator).
#[pyclass(frozen, module = "strata")]
pub struct RawIterator {
    core: Arc<Core>,
    cursor: Cursor,
}

impl RawIterator {
    /// Built with the GIL released, as [`Items::new`].
    pub fn new(
        py: Python<'_>,
        core: Arc<Core>,
        ks: &strata::Keyspace,
        ro: ReadOptions,
    ) -> PyResult<RawIterator> {
        let it = core.run(py, |_| Ok(ks.raw_iterator_opt(&ro)))?;
        Ok(RawIterator { core, cursor: Mutex::new(Some(it)) })
    }

    fn bytes<'py>(
        &self,
        py: Python<'py>,
        part: impl FnOnce(&DbRawIterator) -> Option<&[u8]>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        with_cursor(
            py,
            &self.core,
            &self.cursor,
            |_| Ok(()),
            |it| it.and_then(part).map(|b| py_bytes(py, b)).ok_or_else(not_valid),
        )
    }

    fn step(&self, py: Python<'_>, step: impl FnOnce(&mut DbRawIterator) + Send) -> PyResult<()> {
        let step = |it: &mut DbRawIterator| {
            step(it);
            Ok(())
        };
        with_cursor(py, &self.core, &self.cursor, step, |_| Ok(()))
    }

    /// `next` or `prev`, refused (as a Python error that leaves the cursor
    /// usable) unless it is valid: the engine's refusal would stick to it.
    fn advance(&self, py: Python<'_>, op: &'static str, f: fn(&mut DbRawIterator)) -> PyResult<()> {
        let step = move |it: &mut DbRawIterator| {
            if !it.valid() {
                return Err(strata::Error::InvalidArgument(format!(
                    "{op} on an iterator that is not valid (seek first, or it ran off its range)"
                )));
            }
            f(it);
            Ok(())
        };
        with_cursor(py, &self.core, &self.cursor, step, |_| Ok(()))
    }
}

#[pymethods]
impl RawIterator {
    fn valid(&self, py: Python<'_>) -> PyResult<bool> {
        with_cursor(py, &self.core, &self.cursor, |_| Ok(()), |it| Ok(it.is_some_and(|it| it.valid())))
    }

    fn key<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.bytes(py, |it| it.key())
    }

    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.bytes(py, |it| it.value())
    }

    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        with_cursor(
            py,
            &self.core,
            &self.cursor,
            |_| Ok(()),
            |it| match it.and_then(|it| it.item()) {
                Some((k, v)) => PyTuple::new(py, [py_bytes(py, k), py_bytes(py, v)]),
                None => Err(not_valid()),
            },
        )
    }

    fn seek_to_first(&self, py: Python<'_>) -> PyResult<()> {
        self.step(py, |it| it.seek_to_first())
    }

    fn seek_to_last(&self, py: Python<'_>) -> PyResult<()> {
        self.step(py, |it| it.seek_to_last())
    }

    fn seek(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = buf(key, "key")?;
        self.step(py, |it| it.seek(key))
    }

    fn seek_for_prev(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = buf(key, "key")?;
        self.step(py, |it| it.seek_for_prev(key))
    }

    fn next(&self, py: Python<'_>) -> PyResult<()> {
        self.advance(py, "next", DbRawIterator::next)
    }

    fn prev(&self, py: Python<'_>) -> PyResult<()> {
        self.advance(py, "prev", DbRawIterator::prev)
    }
}

fn not_valid() -> PyErr {
    InvalidArgumentError::new_err("the iterator is not valid (seek first, or it ran off its range)")
}
