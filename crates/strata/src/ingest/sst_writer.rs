//! [`SstFileWriter`]: a table written outside any database, from sorted
//! input, for [`Db::ingest_external_file`](crate::Db::ingest_external_file)
//! (RocksDB's `SstFileWriter`). It is an ordinary Strata table whose entries
//! all carry sequence 0; ingestion gives them their real sequence.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::key::{append_internal_key, user_key, ValueKind};
use crate::range_del::{Fragments, RangeTombstone};
use crate::table::builder::{TableBuilder, TableBuilderOptions};
use crate::vfs::Vfs;
use crate::CompactionPipeline;
use crate::Options;

/// What a finished external table holds ([`SstFileWriter::finish`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalSstFileInfo {
    /// Where the table was written.
    pub path: PathBuf,
    /// Its smallest point key (`None`: it holds only range deletes).
    pub smallest_key: Option<Vec<u8>>,
    /// Its largest point key.
    pub largest_key: Option<Vec<u8>>,
    /// Puts, deletes and merges written.
    pub num_entries: u64,
    /// Range deletes written.
    pub num_range_deletions: u64,
    /// Bytes of the file.
    pub file_size: u64,
}

/// Writes a table file from keys given in strictly increasing order, to be
/// ingested later ([`Db::ingest_external_file`](crate::Db::ingest_external_file)).
/// The table takes its format (block size, compression, filter bits, prefix
/// extractor) from the options it is created with; ingestion rewrites it in
/// the target keyspace's format. Dropping a writer before
/// [`Self::finish`] removes the partial file.
///
/// # Examples
///
/// ```
/// use strata::{Db, IngestExternalFileOptions, Options, SstFileWriter};
///
/// let dir = tempfile::tempdir()?;
/// let mut w = SstFileWriter::create(dir.path().join("load.sst"), &Options::default())?;
/// for i in 0..100u32 {
///     w.put(format!("user{i:03}"), format!("name {i}"))?;
/// }
/// assert!(w.put("user000", "again").is_err(), "keys must increase");
/// let info = w.finish()?;
/// assert_eq!(info.num_entries, 100);
///
/// let db = Db::open(dir.path().join("db"), Options::default())?;
/// db.ingest_external_file(&[&info.path], &IngestExternalFileOptions::default())?;
/// assert_eq!(db.get("user042")?, Some(b"name 42".to_vec()));
/// # Ok::<(), strata::Error>(())
/// ```
pub struct SstFileWriter {
    path: PathBuf,
    vfs: Arc<dyn Vfs>,
    /// `None` once finished.
    builder: Option<TableBuilder>,
    /// The last entry added, as an internal key (empty: none yet); the
    /// next key must be greater than its user key.
    ikey: Vec<u8>,
    /// The entry being added (a buffer kept between adds).
    next: Vec<u8>,
    range_dels: Vec<RangeTombstone>,
}

impl std::fmt::Debug for SstFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstFileWriter").field("path", &self.path).finish_non_exhaustive()
    }
}

impl SstFileWriter {
    /// Creates the table file at `path` (on `opts`' file system), replacing
    /// any file there.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let mut w = SstFileWriter::create(dir.path().join("f.sst"), &Options::default())?;
    /// w.put("a", "1")?;
    /// w.finish()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn create(path: impl AsRef<Path>, opts: &Options) -> Result<SstFileWriter> {
        opts.validate()?;
        let path = path.as_ref().to_path_buf();
        let vfs = opts.vfs.clone();
        let file = vfs.create(&path)?;
        let builder_opts =
            TableBuilderOptions::for_write(opts, opts.bloom_bits_per_key, CompactionPipeline::Sequential);
        Ok(SstFileWriter {
            path,
            vfs,
            builder: Some(TableBuilder::new(file, builder_opts)),
            ikey: Vec::new(),
            next: Vec::new(),
            range_dels: Vec::new(),
        })
    }

    /// Adds a put. Keys must be strictly increasing: an equal or smaller key
    /// than the last is refused with [`Error::InvalidArgument`], and the
    /// writer takes nothing more of it.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let mut w = SstFileWriter::create(dir.path().join("f.sst"), &Options::default())?;
    /// w.put("a", "1")?;
    /// w.put("b", "2")?;
    /// assert!(w.put("b", "3").is_err(), "a key once, in order");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.add(ValueKind::Put, key.as_ref(), value.as_ref())
    }

    /// Adds a delete (hides the key's older values once ingested).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let mut w = SstFileWriter::create(dir.path().join("f.sst"), &Options::default())?;
    /// w.delete("a")?;
    /// assert_eq!(w.finish()?.num_entries, 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.add(ValueKind::Delete, key.as_ref(), &[])
    }

    /// Adds a merge operand (folded by the target keyspace's merge operator).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let mut w = SstFileWriter::create(dir.path().join("f.sst"), &Options::default())?;
    /// w.merge("counter", 1u64.to_le_bytes())?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.add(ValueKind::Merge, key.as_ref(), operand.as_ref())
    }

    /// Adds a delete of `[start, end)`, in any order relative to the point
    /// keys; once ingested it hides the keyspace's older keys in the range
    /// (not this file's own keys). An empty range is refused.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, IngestExternalFileOptions, Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path().join("db"), Options::default())?;
    /// db.put("old1", "x")?;
    /// db.put("old2", "x")?;
    /// let mut w = SstFileWriter::create(dir.path().join("f.sst"), &Options::default())?;
    /// w.delete_range("old", "old9")?;
    /// w.put("old2", "new")?;
    /// let info = w.finish()?;
    /// db.ingest_external_file(&[info.path], &IngestExternalFileOptions::default())?;
    /// assert_eq!((db.get("old1")?, db.get("old2")?), (None, Some(b"new".to_vec())));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let (start, end) = (start.as_ref(), end.as_ref());
        if start >= end {
            return Err(Error::invalid("delete_range: the start must be smaller than the end"));
        }
        self.range_dels.push(RangeTombstone { start: start.to_vec(), end: end.to_vec(), seq: 0 });
        Ok(())
    }

    fn add(&mut self, kind: ValueKind, key: &[u8], value: &[u8]) -> Result<()> {
        let builder = self.builder.as_mut().ok_or_else(|| Error::invalid("the SstFileWriter is finished"))?;
        if !self.ikey.is_empty() && key <= user_key(&self.ikey) {
            return Err(Error::invalid(format!(
                "SstFileWriter: keys must be added in strictly increasing order: {:?} after {:?}",
                String::from_utf8_lossy(key),
                String::from_utf8_lossy(user_key(&self.ikey))
            )));
        }
        self.next.clear();
        append_internal_key(&mut self.next, key, 0, kind);
        builder.add(&self.next, value)?;
        std::mem::swap(&mut self.ikey, &mut self.next);
        Ok(())
    }

    /// Entries added so far (range deletes not counted).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let mut w = SstFileWriter::create(dir.path().join("f.sst"), &Options::default())?;
    /// w.put("a", "1")?;
    /// w.delete_range("b", "c")?;
    /// assert_eq!(w.num_entries(), 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn num_entries(&self) -> u64 {
        self.builder.as_ref().map_or(0, TableBuilder::num_entries)
    }

    /// Writes the rest of the table and syncs it. A table with nothing in it
    /// is refused with [`Error::InvalidArgument`] (and removed).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let mut w = SstFileWriter::create(dir.path().join("f.sst"), &Options::default())?;
    /// w.put("a", "1")?;
    /// let info = w.finish()?;
    /// assert_eq!((info.smallest_key.as_deref(), info.num_entries), (Some(&b"a"[..]), 1));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn finish(mut self) -> Result<ExternalSstFileInfo> {
        let Some(mut builder) = self.builder.take() else {
            return Err(Error::invalid("the SstFileWriter is finished"));
        };
        if builder.num_entries() == 0 && self.range_dels.is_empty() {
            drop(builder);
            let _ = self.vfs.remove_file(&self.path);
            return Err(Error::invalid("SstFileWriter: cannot write a table with no entries"));
        }
        let num_range_deletions = self.range_dels.len() as u64;
        builder.set_range_dels(Fragments::of(&self.range_dels).clipped(None, None));
        let num_entries = builder.num_entries();
        let summary = match builder.finish() {
            Ok(s) => s,
            Err(e) => {
                let _ = self.vfs.remove_file(&self.path);
                return Err(e);
            }
        };
        let user = |ikey: &[u8]| (!ikey.is_empty()).then(|| crate::key::user_key(ikey).to_vec());
        Ok(ExternalSstFileInfo {
            path: self.path.clone(),
            smallest_key: user(&summary.smallest),
            largest_key: user(&summary.largest),
            num_entries,
            num_range_deletions,
            file_size: summary.file_size,
        })
    }
}

impl Drop for SstFileWriter {
    fn drop(&mut self) {
        if let Some(b) = self.builder.take() {
            drop(b);
            let _ = self.vfs.remove_file(&self.path);
        }
    }
}
