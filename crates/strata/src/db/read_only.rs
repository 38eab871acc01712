//! `Db::open_read_only`: recovery that writes nothing. The MANIFEST is
//! replayed but not rewritten, the WALs are replayed into one in-memory
//! memtable instead of new tables, no LOCK is taken and no thread is started,
//! so a database on a full or read-only disk can still be read. Only the
//! default keyspace is opened: other keyspaces' WAL ops are skipped.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::recovery::{
    check_files_present, check_wal_present, checked_policy, logs_to_replay, replay_log, table_cache,
    verify_tables, Parts,
};
use super::shared::{Caches, Shared, SharedParts};
use super::DbInner;
use crate::error::{Error, Result};
use crate::filename::current_path;
use crate::memtable::MemTable;
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

/// What `CURRENT` names and how long that MANIFEST is: every change to the
/// tree changes one of them.
fn manifest_state(vfs: &dyn Vfs, dir: &Path) -> Option<(Vec<u8>, u64)> {
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
    let (block_cache, row_cache) = caches.for_tree();
    let tables = table_cache(&paths, &opts, block_cache.clone());
    if opts.paranoid_checks {
        verify_tables(vfs.as_ref(), &versions.current(), &tables)?;
    }
    let mut mem = MemTable::new();
    let mut max_seq = versions.last_sequence();
    for log in logs_to_replay(&entries, &versions) {
        replay_log(dir, &opts, vfs.as_ref(), log, &mut mem, &mut max_seq)?;
    }
    versions.set_last_sequence(max_seq);
    let versions = Arc::new(versions);
    let shared = Arc::new(Shared::new(SharedParts {
        dir: dir.to_path_buf(),
        vfs: vfs.clone(),
        root_versions: versions.clone(),
        wal: None,
        wal_number: 0,
        lock: None,
        last_seq: max_seq,
        max_total_wal_size: opts.max_total_wal_size,
        caches,
        info_log: None,
    }));
    let name = "default".to_string();
    let parts =
        Parts { id: 0, name, dir: dir.to_path_buf(), opts, versions, tables, block_cache, row_cache, policy };
    let inner = parts.assemble(mem, 0, shared.clone());
    shared.trees.write().insert(0, inner.clone());
    Ok(inner)
}
