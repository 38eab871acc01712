//! [`Core`]: the open database every Python object made from it shares,
//! and the one way they reach it: [`Core::run`], which releases the GIL and
//! holds the database open for the call.
//!
//! Lock order (deadlock freedom): a thread never blocks on one of these
//! locks while it holds the GIL — every lock is taken inside
//! `Python::detach` — and the database lock is taken before an iterator's.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::RwLock;
use pyo3::prelude::*;

use crate::errors::to_py;

/// An open (or closed) database.
pub struct Core {
    /// INVARIANT: `None` once closed; never reopened.
    db: RwLock<Option<strata::Db>>,
    /// Set when `db` becomes `None` (read without the lock for `Db.closed`).
    closed: AtomicBool,
    pub path: PathBuf,
}

impl Core {
    pub fn new(db: strata::Db, path: PathBuf) -> Core {
        Core { db: RwLock::new(Some(db)), closed: AtomicBool::new(false), path }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Runs `f` on the open database with the GIL released; `ClosedError`
    /// once closed. The database cannot close while `f` runs.
    pub fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&strata::Db) -> strata::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| match self.db.read().as_ref() {
            Some(db) => f(db),
            None => Err(strata::Error::Closed),
        })
        .map_err(to_py)
    }

    /// Closes the database (waiting for calls in progress); a second close does nothing.
    pub fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let db = self.db.write().take();
            self.closed.store(true, Ordering::Release);
            db.map_or(Ok(()), strata::Db::close)
        })
        .map_err(to_py)
    }
}

impl Drop for Core {
    /// A database nobody closed closes here, without holding up other
    /// Python threads while it syncs.
    fn drop(&mut self) {
        let mut db = self.db.get_mut().take();
        if db.is_some() {
            // During interpreter shutdown there is nothing to release.
            Python::try_attach(|py| {
                let db = db.take();
                py.detach(move || drop(db))
            });
        }
        drop(db);
    }
}
