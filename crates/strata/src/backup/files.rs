//! File helpers of the backup engine: checksums, checked copies, and removal
//! of whole directories through a [`Vfs`].

use std::path::Path;

use crate::error::{Error, Result};
use crate::util::crc::crc32c_extend;
use crate::vfs::{RandomOpenOptions, Vfs};

/// Read and copy chunk.
const CHUNK: u64 = 1 << 20;

/// The size and CRC32C of the file at `path`.
pub(crate) fn checksum(vfs: &dyn Vfs, path: &Path) -> Result<(u64, u32)> {
    let file = vfs.open_random(path, RandomOpenOptions::default())?;
    let (len, mut crc, mut at) = (file.len(), 0u32, 0u64);
    while at < len {
        let n = (len - at).min(CHUNK);
        crc = crc32c_extend(crc, &file.read_at(at, n as usize)?);
        at += n;
    }
    Ok((len, crc))
}

/// Checks the file at `path` against the size and CRC32C a meta file
/// recorded; a missing, resized or changed file is [`Error::Corruption`]
/// naming it.
pub(crate) fn check(vfs: &dyn Vfs, path: &Path, size: u64, crc: u32) -> Result<()> {
    if !vfs.exists(path) {
        return Err(Error::corruption(format!("backup file {} is missing", path.display())));
    }
    let (got_size, got_crc) = checksum(vfs, path)?;
    if got_size != size {
        return Err(Error::corruption(format!(
            "backup file {}: {got_size} bytes, expected {size}",
            path.display()
        )));
    }
    if got_crc != crc {
        return Err(Error::corruption(format!(
            "backup file {}: crc32c {got_crc:08x}, expected {crc:08x}",
            path.display()
        )));
    }
    Ok(())
}

/// Copies `from` to a new file `to`, checking the bytes read against `size`
/// and `crc` before syncing the copy ([`Error::Corruption`] naming `from`).
pub(crate) fn copy_checked(vfs: &dyn Vfs, from: &Path, to: &Path, size: u64, crc: u32) -> Result<()> {
    if !vfs.exists(from) {
        return Err(Error::corruption(format!("backup file {} is missing", from.display())));
    }
    let src = vfs.open_random(from, RandomOpenOptions::default())?;
    if src.len() != size {
        return Err(Error::corruption(format!(
            "backup file {}: {} bytes, expected {size}",
            from.display(),
            src.len()
        )));
    }
    let mut out = vfs.create(to)?;
    let (mut at, mut got) = (0u64, 0u32);
    while at < size {
        let n = (size - at).min(CHUNK);
        let data = src.read_at(at, n as usize)?;
        got = crc32c_extend(got, &data);
        out.append(&data)?;
        at += n;
    }
    if got != crc {
        return Err(Error::corruption(format!(
            "backup file {}: crc32c {got:08x}, expected {crc:08x}",
            from.display()
        )));
    }
    out.sync()
}

/// Best effort: removes `dir` and everything under it (a path that is a
/// file is removed as a file).
pub(crate) fn remove_tree(vfs: &dyn Vfs, dir: &Path) {
    if vfs.remove_file(dir).is_ok() {
        return;
    }
    if let Ok(names) = vfs.list_dir(dir) {
        for name in names {
            remove_tree(vfs, &dir.join(name));
        }
    }
    let _ = vfs.remove_dir(dir);
}
