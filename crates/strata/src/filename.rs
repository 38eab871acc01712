//! Names of the files in a database directory.

use std::path::{Path, PathBuf};

/// What a file in the database directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A write-ahead log `NNNNNN.log`.
    Wal(u64),
    /// A table `NNNNNN.sst`.
    Table(u64),
    /// A manifest `MANIFEST-NNNNNN`.
    Manifest(u64),
    /// `CURRENT`, naming the live manifest.
    Current,
    /// `LOCK`.
    Lock,
    /// A temporary file `NNNNNN.dbtmp`.
    Temp(u64),
}

/// `dir/NNNNNN.log`.
pub fn wal_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.log"))
}

/// `dir/NNNNNN.sst`.
pub fn table_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.sst"))
}

/// `dir/MANIFEST-NNNNNN`.
pub fn manifest_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(manifest_name(number))
}

/// `MANIFEST-NNNNNN`.
pub fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// `dir/CURRENT`.
pub fn current_path(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

/// `dir/LOCK`.
pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}

/// `dir/NNNNNN.dbtmp`.
pub fn temp_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.dbtmp"))
}

/// Classifies a directory entry; `None` for files Strata does not own.
pub fn parse_file_name(name: &str) -> Option<FileKind> {
    match name {
        "CURRENT" => return Some(FileKind::Current),
        "LOCK" => return Some(FileKind::Lock),
        _ => {}
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return n.parse().ok().map(FileKind::Manifest);
    }
    let (stem, ext) = name.split_once('.')?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = stem.parse().ok()?;
    match ext {
        "log" => Some(FileKind::Wal(n)),
        "sst" => Some(FileKind::Table(n)),
        "dbtmp" => Some(FileKind::Temp(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let d = Path::new("/x");
        for (p, k) in [
            (wal_path(d, 7), FileKind::Wal(7)),
            (table_path(d, 1234567), FileKind::Table(1234567)),
            (manifest_path(d, 3), FileKind::Manifest(3)),
            (temp_path(d, 9), FileKind::Temp(9)),
        ] {
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            assert_eq!(parse_file_name(&name), Some(k));
        }
        assert_eq!(parse_file_name("CURRENT"), Some(FileKind::Current));
        assert_eq!(parse_file_name("notes.txt"), None);
        assert_eq!(parse_file_name(".sst"), None);
    }
}
