//! The MANIFEST (an append-only log of encoded `VersionEdit`s in the WAL's record
//! format, beginning with a full snapshot) and `CURRENT` (names the live MANIFEST).

use std::path::Path;

use crate::error::{Error, Result};
use crate::filename::{current_path, manifest_name, manifest_path, parse_file_name, temp_path, FileKind};
use crate::options::kinds::WalRecoveryMode;
use crate::vfs::Vfs;
use crate::wal::{LogReader, LogWriter};

use super::edit::VersionEdit;

/// An open MANIFEST being appended to.
pub(crate) struct ManifestWriter {
    log: LogWriter,
    number: u64,
}

impl ManifestWriter {
    /// Creates `MANIFEST-<number>` holding `snapshot` and syncs it. The caller
    /// installs it with [`set_current`], whose directory sync also makes the new
    /// file's directory entry durable.
    pub(crate) fn create(vfs: &dyn Vfs, dir: &Path, number: u64, snapshot: &VersionEdit) -> Result<Self> {
        let mut log = LogWriter::new(vfs.create(&manifest_path(dir, number))?);
        log.add_record(&snapshot.encode())?;
        log.sync()?;
        Ok(ManifestWriter { log, number })
    }

    /// Appends one encoded edit and syncs it.
    pub(crate) fn append(&mut self, record: &[u8]) -> Result<()> {
        self.log.add_record(record)?;
        self.log.sync()
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> u64 {
        self.log.len()
    }

    /// The file number of this MANIFEST.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }
}

/// Points `CURRENT` at `MANIFEST-<number>`: write a temp file, sync it, rename
/// it over `CURRENT`, sync the directory. A crash leaves the old or the new
/// `CURRENT`, never a partial one.
pub fn set_current(vfs: &dyn Vfs, dir: &Path, number: u64) -> Result<()> {
    let tmp = temp_path(dir, number);
    let result = (|| {
        let mut f = vfs.create(&tmp)?;
        f.append(format!("{}\n", manifest_name(number)).as_bytes())?;
        f.sync()?;
        drop(f);
        vfs.rename(&tmp, &current_path(dir))?;
        vfs.sync_dir(dir)
    })();
    if result.is_err() && vfs.exists(&tmp) {
        // Best effort: the error that matters is the one returned.
        let _ = vfs.remove_file(&tmp);
    }
    result
}

/// Reads `CURRENT` and returns the number of the MANIFEST it names. A missing
/// `CURRENT`, a missing trailing newline, a malformed name or a named file that
/// does not exist is `Corruption`.
pub fn read_current(vfs: &dyn Vfs, dir: &Path) -> Result<u64> {
    let path = current_path(dir);
    if !vfs.exists(&path) {
        return Err(Error::corruption(format!("{} is missing", path.display())));
    }
    let data = vfs.read_file(&path)?;
    let name =
        data.strip_suffix(b"\n").ok_or_else(|| Error::corruption("CURRENT does not end in a newline"))?;
    let number = match std::str::from_utf8(name).ok().and_then(parse_file_name) {
        Some(FileKind::Manifest(n)) => n,
        _ => {
            return Err(Error::corruption(format!(
                "CURRENT names no manifest: {:?}",
                String::from_utf8_lossy(name)
            )))
        }
    };
    if !vfs.exists(&manifest_path(dir, number)) {
        return Err(Error::corruption(format!(
            "CURRENT names {}, which does not exist",
            manifest_name(number)
        )));
    }
    Ok(number)
}

/// Calls `f` with every edit of the MANIFEST at `path`, in order, and returns how
/// many there were. A torn last record (crash during an append) is dropped;
/// damage before the end, or a record that does not decode, is `Corruption`.
pub fn read_manifest(
    vfs: &dyn Vfs,
    path: &Path,
    mut f: impl FnMut(VersionEdit) -> Result<()>,
) -> Result<u64> {
    // A damaged last record is dropped as a torn append; `VersionSet::recover`
    // then checks the recovered state against the directory, which catches the
    // loss of an edit that had been acknowledged.
    let mut reader =
        LogReader::new(vfs.open_sequential(path)?, WalRecoveryMode::TolerateCorruptedTailRecords);
    let mut n = 0u64;
    while let Some(record) = reader.read_record()? {
        let edit = VersionEdit::decode(&record)
            .map_err(|e| Error::corruption(format!("{} record {n}: {e}", path.display())))?;
        f(edit)?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemVfs;
    use std::path::PathBuf;

    #[test]
    fn current_round_trip_and_bad_current() {
        let vfs = MemVfs::new();
        let dir = PathBuf::from("/db");
        vfs.create_dir_all(&dir).unwrap();
        assert!(read_current(&vfs, &dir).unwrap_err().is_corruption(), "missing CURRENT");
        let snap = VersionEdit { next_file_number: Some(9), ..Default::default() };
        let mut w = ManifestWriter::create(&vfs, &dir, 7, &snap).unwrap();
        assert_eq!(w.number(), 7);
        let e = VersionEdit { log_number: Some(3), ..Default::default() };
        w.append(&e.encode()).unwrap();
        assert!(w.len() > 0);
        set_current(&vfs, &dir, 7).unwrap();
        assert_eq!(read_current(&vfs, &dir).unwrap(), 7);
        assert!(!vfs.exists(&temp_path(&dir, 7)));
        let mut seen = Vec::new();
        assert_eq!(
            read_manifest(&vfs, &manifest_path(&dir, 7), |e| {
                seen.push(e);
                Ok(())
            })
            .unwrap(),
            2
        );
        assert_eq!(seen, vec![snap, e]);

        for bad in
            [&b"MANIFEST-000007"[..], b"MANIFEST-000008\n", b"MANIFEST-000007\n\n", b"xyz\n", b"\n", b""]
        {
            let mut f = vfs.create(&current_path(&dir)).unwrap();
            f.append(bad).unwrap();
            drop(f);
            assert!(read_current(&vfs, &dir).unwrap_err().is_corruption(), "{bad:?}");
        }
    }

    #[test]
    fn undecodable_record_is_corruption() {
        let vfs = MemVfs::new();
        let dir = PathBuf::from("/db");
        vfs.create_dir_all(&dir).unwrap();
        let mut w = ManifestWriter::create(&vfs, &dir, 1, &VersionEdit::default()).unwrap();
        w.append(&[99, 99]).unwrap();
        let err = read_manifest(&vfs, &manifest_path(&dir, 1), |_| Ok(())).unwrap_err();
        assert!(err.is_corruption());
    }
}
