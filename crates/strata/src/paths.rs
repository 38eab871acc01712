//! Where table files live: the database directory, or the data paths of
//! `Options::with_db_paths` (the pipelined-compaction paper's S-PPCP: tables
//! spread over several devices, so reads and writes of different tables go to
//! different devices at once). The LOCK, CURRENT, MANIFEST and WAL files always
//! stay in the database directory.
//!
//! Placement rule: a new table `N` goes to data path `N mod P` (P paths), so
//! the consecutive outputs of a flush or compaction alternate between devices
//! (and a pipelined output finishes one table per other path while the next
//! fills: `sink::OutputWriter`).
//! Recovery lists every path and remembers where each table actually is, so a
//! database whose paths were reordered or extended opens (and a table is found
//! wherever it was written); one written with more paths than given now is
//! reported missing, by name.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::error::Result;
use crate::filename::{parse_file_name, table_path, FileKind};
use crate::vfs::Vfs;

/// The directories that hold a database's tables.
#[derive(Debug)]
pub(crate) struct TablePaths {
    /// The database directory.
    main: PathBuf,
    /// Where new tables go: the data paths, or the main directory alone.
    data: Vec<PathBuf>,
    /// Tables found at open in a directory other than the rule's.
    found: Mutex<HashMap<u64, PathBuf>>,
}

impl TablePaths {
    /// The paths of a database in `main` with data paths `data` (empty: all
    /// tables in `main`).
    pub(crate) fn new(main: &Path, data: &[PathBuf]) -> Self {
        let data = if data.is_empty() { vec![main.to_path_buf()] } else { data.to_vec() };
        TablePaths { main: main.to_path_buf(), data, found: Mutex::default() }
    }

    /// Every directory that may hold tables: the main one, then each data
    /// path not equal to it.
    pub(crate) fn dirs(&self) -> Vec<&Path> {
        let mut v = vec![self.main.as_path()];
        for d in &self.data {
            if !v.contains(&d.as_path()) {
                v.push(d);
            }
        }
        v
    }

    /// How many directories new tables alternate between.
    pub(crate) fn data_path_count(&self) -> usize {
        self.data.len()
    }

    /// The directory a new table `id` is written to.
    pub(crate) fn dir_for_new(&self, id: u64) -> &Path {
        &self.data[(id % self.data.len() as u64) as usize]
    }

    /// The path of table `id`: where open found it, or where the rule puts it.
    pub(crate) fn table(&self, id: u64) -> PathBuf {
        match self.found.lock().get(&id) {
            Some(dir) => table_path(dir, id),
            None => table_path(self.dir_for_new(id), id),
        }
    }

    /// Lists every directory (with `create`, creating data paths that do not
    /// exist yet; without, skipping them) and records where each table is.
    /// Returns the tables found, with the directory each is in (a table in two
    /// directories is reported in both; the rule's directory is the one used).
    pub(crate) fn scan(&self, vfs: &dyn Vfs, create: bool) -> Result<Vec<(u64, PathBuf)>> {
        let mut tables = Vec::new();
        let mut found = self.found.lock();
        found.clear();
        for dir in self.dirs() {
            if !vfs.exists(dir) {
                if !create {
                    continue;
                }
                vfs.create_dir_all(dir)?;
                // The new directory's entry is durable before tables go in it.
                if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                    vfs.sync_dir(parent)?;
                }
            }
            for name in vfs.list_dir(dir)? {
                if let Some(FileKind::Table(id)) = parse_file_name(&name) {
                    tables.push((id, dir.to_path_buf()));
                }
            }
        }
        // Where the rule puts a table wins; only the others are remembered
        // (all of them once the paths were reordered, so no scan per table).
        let in_place: HashSet<u64> =
            tables.iter().filter(|(id, d)| d.as_path() == self.dir_for_new(*id)).map(|(id, _)| *id).collect();
        for (id, dir) in &tables {
            if !in_place.contains(id) {
                found.insert(*id, dir.clone());
            }
        }
        Ok(tables)
    }

    /// Best effort: removes temp files (a table copy an append's
    /// copy-on-write left at a crash) from the data paths; the main
    /// directory's are removed with its other temp files.
    pub(crate) fn remove_temps(&self, vfs: &dyn Vfs) {
        for dir in self.dirs().into_iter().skip(1) {
            for name in vfs.list_dir(dir).unwrap_or_default() {
                if let Some(FileKind::Temp(_)) = parse_file_name(&name) {
                    let _ = vfs.remove_file(&dir.join(name));
                }
            }
        }
    }

    /// Forgets a removed table's location.
    pub(crate) fn forget(&self, id: u64) {
        self.found.lock().remove(&id);
    }

    /// Syncs every directory that tables are created in.
    pub(crate) fn sync_data_dirs(&self, vfs: &dyn Vfs, ids: &[u64]) -> Result<()> {
        let mut synced: Vec<&Path> = Vec::new();
        for id in ids {
            let dir = self.dir_for_new(*id);
            if !synced.contains(&dir) {
                vfs.sync_dir(dir)?;
                synced.push(dir);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemVfs;

    #[test]
    fn new_tables_alternate_between_data_paths() {
        let p = TablePaths::new(Path::new("/db"), &[PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(p.dir_for_new(4), Path::new("/a"));
        assert_eq!(p.dir_for_new(7), Path::new("/b"));
        assert_eq!(p.table(7), Path::new("/b/000007.sst"));
        assert_eq!(p.dirs(), vec![Path::new("/db"), Path::new("/a"), Path::new("/b")]);
        let alone = TablePaths::new(Path::new("/db"), &[]);
        assert_eq!(alone.table(7), Path::new("/db/000007.sst"));
        assert_eq!(alone.dirs(), vec![Path::new("/db")]);
    }

    #[test]
    fn a_table_is_found_wherever_it_was_written() {
        let vfs = MemVfs::new();
        for dir in ["/db", "/a", "/b"] {
            vfs.create_dir_all(Path::new(dir)).expect("dir");
        }
        // Written with the paths in the other order: 3 went to /a, 4 to /b.
        vfs.create(Path::new("/a/000003.sst")).expect("create");
        vfs.create(Path::new("/b/000004.sst")).expect("create");
        vfs.create(Path::new("/db/000005.sst")).expect("create");
        let p = TablePaths::new(Path::new("/db"), &[PathBuf::from("/a"), PathBuf::from("/b")]);
        let found = p.scan(&vfs, false).expect("scan");
        assert_eq!(found.len(), 3);
        assert_eq!(p.table(3), Path::new("/a/000003.sst"));
        assert_eq!(p.table(4), Path::new("/b/000004.sst"));
        assert_eq!(p.table(5), Path::new("/db/000005.sst"));
        p.forget(3);
        assert_eq!(p.table(3), Path::new("/b/000003.sst"), "the rule, once forgotten");
    }

    #[test]
    fn temp_files_in_data_paths_are_removed() {
        let vfs = MemVfs::new();
        for dir in ["/db", "/a"] {
            vfs.create_dir_all(Path::new(dir)).expect("dir");
        }
        for f in ["/a/000003.sst", "/a/000003.dbtmp", "/a/notes.txt", "/db/000009.dbtmp"] {
            vfs.create(Path::new(f)).expect("create");
        }
        TablePaths::new(Path::new("/db"), &[PathBuf::from("/a")]).remove_temps(&vfs);
        let mut left = vfs.list_dir(Path::new("/a")).expect("list");
        left.sort();
        assert_eq!(left, ["000003.sst", "notes.txt"]);
        // The main directory's are left to the removal of its other stale files.
        assert!(vfs.exists(Path::new("/db/000009.dbtmp")));
    }
}
