//! The `meta/<id>` file: one backup's timestamp and every file it holds, each
//! with its size and CRC32C, followed by a CRC32C of the text before it. A
//! backup exists exactly when its meta file does.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use crate::util::crc::crc32c;

/// First line of every meta file.
const MAGIC: &str = "strata-backup-meta 1";

/// One file of a backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileEntry {
    /// Where it goes in a restored database, relative to its directory.
    pub rel: PathBuf,
    pub size: u64,
    pub crc: u32,
    /// Its name in `shared/` (tables); `None`: it is in `private/<id>/<rel>`.
    pub shared: Option<String>,
}

/// One backup's description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BackupMeta {
    /// Seconds since the Unix epoch when the backup was taken.
    pub timestamp: u64,
    pub files: Vec<FileEntry>,
}

impl BackupMeta {
    /// The meta file's bytes.
    pub(crate) fn encode(&self) -> Result<Vec<u8>> {
        let mut s = format!("{MAGIC}\ntimestamp\t{}\n", self.timestamp);
        for f in &self.files {
            let rel =
                f.rel.to_str().filter(|r| plain(r)).ok_or_else(|| {
                    Error::invalid(format!("{}: cannot be named in a backup", f.rel.display()))
                })?;
            let shared = f.shared.as_deref().unwrap_or("-");
            if !plain(shared) {
                return Err(Error::invalid(format!("{shared}: cannot be named in a backup")));
            }
            s.push_str(&format!("file\t{rel}\t{}\t{:08x}\t{shared}\n", f.size, f.crc));
        }
        let crc = crc32c(s.as_bytes());
        s.push_str(&format!("end\t{crc:08x}\n"));
        Ok(s.into_bytes())
    }

    /// Parses a meta file's bytes; `name` is for the error.
    pub(crate) fn decode(bytes: &[u8], name: &Path) -> Result<BackupMeta> {
        let bad = |why: &str| Error::corruption(format!("backup meta file {}: {why}", name.display()));
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8"))?;
        let body_end =
            text.trim_end_matches('\n').rfind('\n').map(|i| i + 1).ok_or_else(|| bad("truncated"))?;
        let (body, trailer) = text.split_at(body_end);
        let crc = trailer
            .strip_prefix("end\t")
            .and_then(|t| t.strip_suffix('\n'))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| bad("no end line (truncated)"))?;
        if crc32c(body.as_bytes()) != crc {
            return Err(bad("checksum mismatch"));
        }
        let mut lines = body.lines();
        if lines.next() != Some(MAGIC) {
            return Err(bad("unknown format"));
        }
        let timestamp = lines
            .next()
            .and_then(|l| l.strip_prefix("timestamp\t"))
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| bad("no timestamp"))?;
        let mut files = Vec::new();
        for line in lines {
            let fields: Vec<&str> = line.split('\t').collect();
            let [tag, rel, size, crc, shared] = fields[..] else {
                return Err(bad(&format!("bad line {line:?}")));
            };
            let size = size.parse().ok();
            let crc = u32::from_str_radix(crc, 16).ok();
            let (Some(size), Some(crc), "file", true) = (size, crc, tag, relative(rel) && plain(shared))
            else {
                return Err(bad(&format!("bad line {line:?}")));
            };
            let shared = (shared != "-").then(|| shared.to_string());
            if shared.as_deref().is_some_and(|s| s.contains('/')) {
                return Err(bad(&format!("bad shared name in {line:?}")));
            }
            files.push(FileEntry { rel: PathBuf::from(rel), size, crc, shared });
        }
        Ok(BackupMeta { timestamp, files })
    }

    /// Total bytes of its files.
    pub(crate) fn size(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// No separator or line break can be mistaken for the format's.
fn plain(s: &str) -> bool {
    !s.is_empty() && !s.contains(['\t', '\n', '\r'])
}

/// A path that stays inside the directory it is joined to.
fn relative(rel: &str) -> bool {
    let p = Path::new(rel);
    plain(rel) && p.components().all(|c| matches!(c, Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BackupMeta {
        BackupMeta {
            timestamp: 1_700_000_000,
            files: vec![
                FileEntry { rel: "CURRENT".into(), size: 16, crc: 0xdead_beef, shared: None },
                FileEntry {
                    rel: "keyspaces/1/000007.sst".into(),
                    size: 4096,
                    crc: 7,
                    shared: Some("1-7-4096-00000007.sst".into()),
                },
            ],
        }
    }

    #[test]
    fn meta_round_trips() {
        let m = sample();
        assert_eq!(BackupMeta::decode(&m.encode().unwrap(), Path::new("meta/1")).unwrap(), m);
    }

    #[test]
    fn a_flipped_or_truncated_meta_file_is_corruption() {
        let bytes = sample().encode().unwrap();
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x01;
            assert!(BackupMeta::decode(&b, Path::new("m")).is_err(), "flip at {i}");
        }
        for n in 0..bytes.len() {
            assert!(
                BackupMeta::decode(&bytes[..n], Path::new("m")).unwrap_err().is_corruption(),
                "cut at {n}"
            );
        }
    }

    #[test]
    fn a_path_leaving_the_restore_directory_is_refused() {
        let mut m = sample();
        m.files[0].rel = "../evil".into();
        let mut text = String::from_utf8(m.encode().unwrap()).unwrap();
        text.truncate(text.rfind("end\t").unwrap());
        let crc = crc32c(text.as_bytes());
        text.push_str(&format!("end\t{crc:08x}\n"));
        assert!(BackupMeta::decode(text.as_bytes(), Path::new("m")).unwrap_err().is_corruption());
        assert!(sample().encode().is_ok());
        m.files[0].rel = "a\tb".into();
        assert!(m.encode().is_err());
    }
}
