//! Snapshots on disk: the state machine's pairs in one file per snapshot,
//! `snapshots/<id>.snap`, written whole before the state machine names it
//! (temporary file, fsync, rename, directory fsync), so a named snapshot is
//! always complete. Written by hand: the format is this crate's own.
//!
//! Data: `u32` key length, key, `u32` value length, value (little-endian),
//! repeated. File: the data, then its CRC-32C (`u32`).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Appends one pair to snapshot data.
pub fn encode_pair(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    for part in [key, value] {
        // Keys and values are far below 4 GiB (the engine's entry limit).
        out.extend_from_slice(&(part.len() as u32).to_le_bytes());
        out.extend_from_slice(part);
    }
}

/// The pairs of snapshot data; `InvalidData` if it is cut short.
pub fn decode_pairs(mut data: &[u8]) -> io::Result<Vec<(&[u8], &[u8])>> {
    fn part<'a>(data: &mut &'a [u8]) -> io::Result<&'a [u8]> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "snapshot data is cut short");
        let (len, rest) = data.split_first_chunk::<4>().ok_or_else(bad)?;
        let len = u32::from_le_bytes(*len) as usize;
        if rest.len() < len {
            return Err(bad());
        }
        let (p, rest) = rest.split_at(len);
        *data = rest;
        Ok(p)
    }
    let mut pairs = Vec::new();
    while !data.is_empty() {
        let k = part(&mut data)?;
        let v = part(&mut data)?;
        pairs.push((k, v));
    }
    Ok(pairs)
}

/// The snapshot directory of a node.
#[derive(Clone, Debug)]
pub struct SnapshotDir {
    dir: PathBuf,
}

impl SnapshotDir {
    pub fn open(dir: PathBuf) -> io::Result<SnapshotDir> {
        fs::create_dir_all(&dir)?;
        Ok(SnapshotDir { dir })
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.snap"))
    }

    /// Writes snapshot `id` durably.
    pub fn write(&self, id: &str, data: &[u8]) -> io::Result<()> {
        let tmp = self.dir.join(format!("{id}.snap.tmp"));
        let mut f = fs::File::create(&tmp)?;
        f.write_all(data)?;
        f.write_all(&crc32c::crc32c(data).to_le_bytes())?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, self.path(id))?;
        sync_dir(&self.dir)
    }

    /// The data of snapshot `id`, checked.
    pub fn read(&self, id: &str) -> io::Result<Vec<u8>> {
        let mut data = fs::read(self.path(id))?;
        let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, format!("snapshot {id}: {why}"));
        let split = data.len().checked_sub(4).ok_or_else(|| bad("shorter than its checksum"))?;
        let crc = u32::from_le_bytes(data[split..].try_into().map_err(|_| bad("no checksum"))?);
        data.truncate(split);
        if crc32c::crc32c(&data) != crc {
            return Err(bad("checksum mismatch"));
        }
        Ok(data)
    }

    /// Removes every snapshot file but `keep`'s (and unfinished ones).
    pub fn remove_others(&self, keep: Option<&str>) -> io::Result<()> {
        let keep = keep.map(|id| format!("{id}.snap"));
        for e in fs::read_dir(&self.dir)? {
            let name = e?.file_name();
            let name = name.to_string_lossy();
            let ours = name.ends_with(".snap") || name.ends_with(".snap.tmp");
            if ours && Some(name.as_ref()) != keep.as_deref() {
                fs::remove_file(self.dir.join(name.as_ref()))?;
            }
        }
        Ok(())
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}
