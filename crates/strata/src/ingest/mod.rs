//! Bulk loading (RocksDB's `SstFileWriter` + `IngestExternalFile`): tables
//! written outside the database from sorted input (sst_writer.rs), then
//! added to a keyspace's tree in one MANIFEST edit (db/ingest.rs) without
//! passing through the WAL, the memtable or level 0's compactions.

mod sst_writer;

pub use sst_writer::{ExternalSstFileInfo, SstFileWriter};

/// How [`Db::ingest_external_file`](crate::Db::ingest_external_file) adds files.
///
/// # Examples
///
/// ```
/// let opts = strata::IngestExternalFileOptions::default().with_move_files(true);
/// # let _ = opts;
/// ```
#[derive(Clone, Debug)]
pub struct IngestExternalFileOptions {
    pub(crate) move_files: bool,
    pub(crate) allow_blocking_flush: bool,
}

impl Default for IngestExternalFileOptions {
    fn default() -> Self {
        IngestExternalFileOptions { move_files: false, allow_blocking_flush: true }
    }
}

impl IngestExternalFileOptions {
    /// Move the files into the database instead of copying them (RocksDB
    /// `move_files`; default false: they are left as they were). Files that
    /// touch no key the keyspace holds, ingested while no snapshot is live,
    /// join as they are: a move hard-links them (copies where the file
    /// system cannot link) and removes the sources. Other files are
    /// rewritten as tables of the keyspace, each entry stamped with the
    /// ingestion's sequence; a move then only removes the sources after.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, IngestExternalFileOptions, Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path().join("db"), Options::default())?;
    /// let mut w = SstFileWriter::create(dir.path().join("f.sst"), &Options::default())?;
    /// w.put("k", "v")?;
    /// let f = w.finish()?.path;
    /// db.ingest_external_file(&[&f], &IngestExternalFileOptions::default().with_move_files(true))?;
    /// assert!(!f.exists());
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_move_files(mut self, move_files: bool) -> Self {
        self.move_files = move_files;
        self
    }

    /// When the files' key range overlaps writes still in the keyspace's
    /// memtable, flush it first (RocksDB `allow_blocking_flush`; default
    /// true). Off, such an ingestion fails with
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, IngestExternalFileOptions, Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path().join("db"), Options::default())?;
    /// let mut w = SstFileWriter::create(dir.path().join("f.sst"), &Options::default())?;
    /// w.put("k", "v")?;
    /// let f = w.finish()?.path;
    /// db.put("k", "in the memtable")?;
    /// let strict = IngestExternalFileOptions::default().with_allow_blocking_flush(false);
    /// assert!(db.ingest_external_file(&[&f], &strict).is_err());
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_allow_blocking_flush(mut self, allow: bool) -> Self {
        self.allow_blocking_flush = allow;
        self
    }
}
