//! `Db::open_read_only`: recovery that writes nothing. Every MANIFEST (the
//! root's and each keyspace's) is replayed but not rewritten, the WALs are
//! replayed into one in-memory memtable per keyspace instead of new tables,
//! no LOCK is taken and no thread is started, so a database on a full or
//! read-only disk can still be read.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::ks_dirs::{keyspace_dir, KEYSPACES_DIR};
use super::ks_recovery::{load_keyspaces_read_only, open_listed_wals, replay_wals_into_memory};
use super::shared::{Caches, Shared, SharedParts};
use super::tree_open::{
    check_files_present, check_wal_present, checked_policy, verify_tables, Parts, TreeCaches,
};
use super::DbInner;
use crate::error::{Error, Result};
use crate::filename::current_path;
use crate::options::Options;
use crate::paths::TablePaths;
use crate::version::VersionSet;
use crate::vfs::Vfs;

/// How long an open keeps starting again while a writer beside it keeps
/// changing the tree; the pause between attempts doubles up to 16 ms.
const RETRY_FOR: Duration = Duration::from_secs(5);

/// Opens read-only. A writer working beside the open may delete a WAL or
/// table the open already chose to read (after a flush or compaction that its
/// MANIFEST records); the open then starts again from the newer state, as
/// long as the MANIFEST keeps moving (for up to [`RETRY_FOR`]). An error with
/// the MANIFEST unchanged is a real one and is returned at once.
pub(crate) fn open(dir: &Path, opts: Options) -> Result<Arc<DbInner>> {
    let vfs = opts.vfs.clone();
    crate::backup::refuse_incomplete_restore(vfs.as_ref(), dir)?;
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        let before = manifest_state(vfs.as_ref(), dir);
        match open_once(dir, opts.clone()) {
            Err(_)
                if start.elapsed() < RETRY_FOR
                    && before.is_some()
                    && manifest_state(vfs.as_ref(), dir) != before =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(16));
            }
            r => return r,
        }
    }
}

/// What each `CURRENT` (the root's and every keyspace's) names and how long
/// that MANIFEST is: every change to a tree changes one of them.
fn manifest_state(vfs: &dyn Vfs, dir: &Path) -> Option<Vec<(Vec<u8>, u64)>> {
    let mut state = vec![tree_state(vfs, dir)?];
    if let Ok(mut ids) = vfs.list_dir(&dir.join(KEYSPACES_DIR)) {
        ids.sort();
        let ids = ids.iter().filter_map(|n| n.parse::<u32>().ok());
        state.extend(ids.filter_map(|id| tree_state(vfs, &keyspace_dir(dir, id))));
    }
    Some(state)
}

fn tree_state(vfs: &dyn Vfs, dir: &Path) -> Option<(Vec<u8>, u64)> {
    let current = vfs.read_file(&current_path(dir)).ok()?;
    let name = std::str::from_utf8(&current).ok()?.trim_end();
    let size = vfs.file_size(&dir.join(name)).ok()?;
    Some((current, size))
}

fn open_once(dir: &Path, opts: Options) -> Result<Arc<DbInner>> {
    let policy = checked_policy(&opts)?;
    let vfs = opts.vfs.clone();
    if !vfs.exists(&current_path(dir)) {
        return Err(Error::NotADatabase(format!(
            "{} holds no database (no CURRENT file); a read-only open creates nothing",
            dir.display()
        )));
    }
    let entries = vfs.list_dir(dir)?;
    let wals = open_listed_wals(vfs.as_ref(), dir, &entries)?;
    crate::options_file::check_at_open(vfs.as_ref(), dir)?;
    // A read-only open creates no data path and deletes nothing.
    let paths = Arc::new(TablePaths::new(dir, &opts.db_paths));
    paths.scan(vfs.as_ref(), false)?;
    let mut root_log = 0;
    let versions = VersionSet::load_read_only(vfs.clone(), dir, opts.num_levels, |v, log| {
        root_log = log;
        check_files_present(vfs.as_ref(), dir, &paths, v, 0)
    })?;
    // As at a writable open: with keyspaces, the root's log number may name a deleted WAL.
    if !versions.ever_had_keyspaces() {
        check_wal_present(vfs.as_ref(), dir, root_log)?;
    }
    let caches = Caches::new(&opts);
    let tree_caches = TreeCaches::new(&caches, &paths, &opts);
    if opts.paranoid_checks {
        verify_tables(vfs.as_ref(), &versions.current(), &tree_caches.tables)?;
    }
    let versions = Arc::new(versions);
    let mut trees = vec![Parts {
        id: 0,
        name: "default".to_string(),
        dir: dir.to_path_buf(),
        opts: opts.clone(),
        versions: versions.clone(),
        caches: tree_caches,
        policy,
    }];
    trees.extend(load_keyspaces_read_only(dir, &opts, &versions, &caches)?);
    let (mems, last_seq) = replay_wals_into_memory(&opts, &trees, wals)?;
    let shared = Arc::new(Shared::new(SharedParts {
        dir: dir.to_path_buf(),
        vfs: vfs.clone(),
        root_versions: versions,
        wal: None,
        wal_number: 0,
        lock: None,
        last_seq,
        max_total_wal_size: opts.max_total_wal_size,
        caches,
        info_log: None,
        old_wals: Default::default(),
    }));
    let inners: Vec<Arc<DbInner>> =
        trees.into_iter().zip(mems).map(|(p, mem)| p.assemble(mem, 0, shared.clone())).collect();
    shared.trees.write().extend(inners.iter().map(|t| (t.id, t.clone())));
    Ok(inners[0].clone())
}
