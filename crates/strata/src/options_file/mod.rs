//! The `OPTIONS-NNNNNN` file (RocksDB's `OPTIONS-000007`): the options the
//! database last opened with, as INI-like text for people and tools, the
//! database-wide compatibility check made at open, and
//! [`Options::load_latest`].
//!
//! The writer and parser are hand-written: the grammar is part of the
//! product's on-disk format (docs/FORMAT.md), so it must not change with a
//! serialization library's choices. The MANIFEST stays the engine's source of
//! truth for per-tree options; this file is never needed to open a database.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::options::Options;
use crate::vfs::Vfs;

/// The grammar version this build writes and the newest it reads.
pub(crate) const OPTIONS_FILE_VERSION: u64 = 1;
/// The only comparator Strata has (RocksDB's name for it).
pub(crate) const COMPARATOR: &str = "leveldb.BytewiseComparator";
/// OPTIONS files kept after a new one is written (RocksDB keeps two).
const KEEP: usize = 2;
const PREFIX: &str = "OPTIONS-";
const TEMP_SUFFIX: &str = ".dbtmp";

/// `OPTIONS-NNNNNN`.
pub(crate) fn file_name(number: u64) -> String {
    format!("{PREFIX}{number:06}")
}

/// The number of an `OPTIONS-NNNNNN` name (not of its `.dbtmp`).
pub(crate) fn parse_name(name: &str) -> Option<u64> {
    let n = name.strip_prefix(PREFIX)?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

/// Whether `name` is an OPTIONS file or a temporary one being written.
pub(crate) fn is_options_file(name: &str) -> bool {
    parse_name(name.strip_suffix(TEMP_SUFFIX).unwrap_or(name)).is_some()
}

/// The OPTIONS files in `dir`, oldest first.
pub(super) fn list(vfs: &dyn Vfs, dir: &Path) -> Result<Vec<u64>> {
    let mut numbers: Vec<u64> = vfs.list_dir(dir)?.iter().filter_map(|n| parse_name(n)).collect();
    numbers.sort_unstable();
    Ok(numbers)
}

/// The newest OPTIONS file in `dir`, if any.
pub(crate) fn newest(vfs: &dyn Vfs, dir: &Path) -> Result<Option<PathBuf>> {
    Ok(list(vfs, dir)?.last().map(|&n| dir.join(file_name(n))))
}

/// Removes `OPTIONS-*.dbtmp` files a crash left behind (the removals are
/// best effort; a directory that cannot be listed is an error).
pub(crate) fn remove_temps(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    for name in vfs.list_dir(dir)? {
        if name.strip_suffix(TEMP_SUFFIX).and_then(parse_name).is_some() {
            let _ = vfs.remove_file(&dir.join(name));
        }
    }
    Ok(())
}

/// Writes a new OPTIONS file for `trees` (name and options of each keyspace,
/// `default` first): to `OPTIONS-n.dbtmp`, synced, renamed, the directory
/// synced; then all but the newest [`KEEP`] are deleted.
pub(crate) fn write(vfs: &dyn Vfs, dir: &Path, trees: &[(String, Options)]) -> Result<PathBuf> {
    remove_temps(vfs, dir)?;
    let existing = list(vfs, dir)?;
    let number = existing.last().map_or(1, |n| n + 1);
    let path = dir.join(file_name(number));
    let tmp = dir.join(format!("{}{TEMP_SUFFIX}", file_name(number)));
    let written = (|| {
        let mut f = vfs.create(&tmp)?;
        f.append(render(trees).as_bytes())?;
        f.sync()?;
        drop(f);
        vfs.rename(&tmp, &path)?;
        vfs.sync_dir(dir)
    })();
    if let Err(e) = written {
        let _ = vfs.remove_file(&tmp);
        return Err(e);
    }
    let keep_from = existing.len().saturating_sub(KEEP - 1);
    for old in &existing[..keep_from] {
        let _ = vfs.remove_file(&dir.join(file_name(*old)));
    }
    Ok(path)
}

/// The check every open (read-write and read-only) makes against the newest
/// OPTIONS file. Only a file that passes its checksum can refuse the open: one
/// that fails it, has none (older builds) or cannot be parsed is skipped
/// with a warning, since the MANIFEST is authoritative and a read-write open
/// rewrites the file. An I/O error (listing the directory, reading the file)
/// fails the open like any other I/O error of an open.
pub(crate) fn check_at_open(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    let Some(path) = newest(vfs, dir)? else {
        return Ok(());
    };
    match read(vfs, &path).and_then(|p| p.check().map(|()| p)) {
        Ok(_) => Ok(()),
        Err(e @ (Error::InvalidArgument(_) | Error::Io(_))) => Err(e),
        Err(e) => {
            log::warn!(target: "strata::options", "{} skipped, not checked: {e}", path.display());
            Ok(())
        }
    }
}

mod load;
mod text;

use text::read;
pub(crate) use text::render;

#[cfg(test)]
mod tests;
