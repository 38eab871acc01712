//! `Db::open_read_only` and `Db::open_as_secondary`: recovery that writes
//! nothing. Every MANIFEST (the root's and each keyspace's) is replayed but
//! not rewritten, the WALs are replayed into one in-memory memtable per
//! keyspace instead of new tables, no LOCK is taken and no thread is
//! started, so a database on a full or read-only disk can still be read,
//! and a secondary can read beside its primary. A secondary's catch-up
//! loads the files the same way again and shows the result in its trees.

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
use crate::info_log::InfoLog;
use crate::key::SeqNum;
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
/// `secondary`: the directory of a secondary instance ([`Db::open_as_secondary`](crate::Db::open_as_secondary)),
/// which then keeps its info `LOG` there and may catch up with the primary.
pub(crate) fn open(dir: &Path, opts: Options, secondary: Option<&Path>) -> Result<Arc<DbInner>> {
    crate::backup::refuse_incomplete_restore(opts.vfs.as_ref(), dir)?;
    let caches = Caches::new(&opts);
    let loaded = retrying(dir, &opts, || load_once(dir, &opts, &caches, false))?;
    let info_log = match secondary {
        Some(s) => {
            opts.vfs.create_dir_all(s)?;
            let names = opts.vfs.list_dir(s)?;
            opts.info_log
                .then(|| InfoLog::open(opts.vfs.clone(), s, opts.info_log_limits(), &names))
                .flatten()
        }
        None => None,
    };
    let shared = Arc::new(Shared::new(SharedParts {
        dir: dir.to_path_buf(),
        vfs: opts.vfs.clone(),
        root_versions: loaded.root_versions,
        wal: None,
        wal_number: 0,
        lock: None,
        last_seq: loaded.last_seq,
        max_total_wal_size: opts.max_total_wal_size,
        caches,
        info_log,
        old_wals: Default::default(),
        secondary: secondary.map(Path::to_path_buf),
    }));
    let inners: Vec<Arc<DbInner>> =
        loaded.trees.into_iter().map(|(p, mem)| p.assemble(mem, 0, shared.clone())).collect();
    shared.trees.write().extend(inners.iter().map(|t| (t.id, t.clone())));
    Ok(inners[0].clone())
}

/// Runs `load` again while a writer beside it keeps changing the files.
fn retrying(dir: &Path, opts: &Options, mut load: impl FnMut() -> Result<Loaded>) -> Result<Loaded> {
    let vfs = opts.vfs.as_ref();
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        let before = manifest_state(vfs, dir);
        match load() {
            Err(_)
                if start.elapsed() < RETRY_FOR && before.is_some() && manifest_state(vfs, dir) != before =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(16));
            }
            r => return r,
        }
    }
}

/// What a read-only load of a database's files finds.
struct Loaded {
    /// Every tree (the default first) with its WAL ops replayed into a memtable.
    trees: Vec<(Parts, MemTable)>,
    root_versions: Arc<VersionSet>,
    last_seq: SeqNum,
}

impl DbInner {
    /// A secondary instance's catch-up (see [`Db::try_catch_up_with_primary`](crate::Db::try_catch_up_with_primary)):
    /// reads the primary's MANIFESTs and live WALs again and makes every open
    /// tree show what they hold. Keyspaces the primary dropped are dropped
    /// here too; ones it created since are opened.
    pub(crate) fn catch_up_with_primary(&self) -> Result<()> {
        let shared = &self.shared;
        if shared.secondary.is_none() {
            return Err(Error::NotSupported(
                "try_catch_up_with_primary needs a secondary instance (Db::open_as_secondary)".into(),
            ));
        }
        self.check_live()?;
        // A secondary has no WAL: its WAL lock serialises catch-ups.
        let _one_at_a_time = shared.wal.lock();
        let root = shared.tree(0)?;
        let loaded =
            retrying(&shared.dir, &root.opts, || load_once(&shared.dir, &root.opts, &shared.caches, true))?;
        // A snapshot taken before would read the new files at its old
        // sequence, where the primary's compactions may have dropped the
        // versions it should see: refused rather than silently wrong.
        shared.snapshots.while_none(|| self.show_loaded(loaded)).ok_or_else(|| {
            Error::Busy(
                "a snapshot of this secondary is live: release it before catching up with the primary".into(),
            )
        })
    }

    /// Makes every open tree show `loaded` (see [`Self::catch_up_with_primary`]).
    fn show_loaded(&self, loaded: Loaded) {
        let shared = &self.shared;
        let mut seen = Vec::with_capacity(loaded.trees.len());
        for (parts, mem) in loaded.trees {
            seen.push(parts.id);
            let open = shared.trees.read().get(&parts.id).cloned();
            match open {
                Some(tree) => tree.adopt(&parts.versions, mem),
                None => {
                    let tree = parts.assemble(mem, 0, shared.clone());
                    shared.trees.write().insert(tree.id, tree);
                }
            }
        }
        let gone: Vec<u32> = shared.trees.read().keys().copied().filter(|id| !seen.contains(id)).collect();
        for id in gone {
            if let Some(t) = shared.trees.write().remove(&id) {
                t.dropped.store(true, std::sync::atomic::Ordering::Release);
            }
        }
        shared.root_versions.set_last_sequence(loaded.last_seq);
        shared.visible_seq.store(loaded.last_seq, std::sync::atomic::Ordering::Release);
        if let Some(log) = &shared.info_log {
            log.line(
                "strata::secondary",
                format_args!("caught up with the primary at sequence {}", loaded.last_seq),
            );
        }
    }

    /// Shows `versions`' current tree and `mem` (a fresh load of this tree)
    /// to readers from now on.
    fn adopt(&self, versions: &VersionSet, mem: MemTable) {
        self.versions.adopt(versions);
        // Tables the primary wrote since may sit in any data path.
        let _ = self.tables.paths().scan(self.vfs.as_ref(), false);
        let mut st = self.state.lock();
        st.mem = Arc::new(mem);
        st.imms.clear();
        self.install_super_version(&st);
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

/// Reads the database's files once, giving the trees `caches`. A secondary
/// `catching_up` skips the OPTIONS file check its open made.
fn load_once(dir: &Path, opts: &Options, caches: &Caches, catching_up: bool) -> Result<Loaded> {
    let policy = checked_policy(opts)?;
    let vfs = opts.vfs.clone();
    if !vfs.exists(&current_path(dir)) {
        return Err(Error::NotADatabase(format!(
            "{} holds no database (no CURRENT file); a read-only open creates nothing",
            dir.display()
        )));
    }
    let entries = vfs.list_dir(dir)?;
    let wals = open_listed_wals(vfs.as_ref(), dir, &entries)?;
    if !catching_up {
        crate::options_file::check_at_open(vfs.as_ref(), dir)?;
    }
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
    let tree_caches = TreeCaches::new(caches, &paths, opts);
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
    trees.extend(load_keyspaces_read_only(dir, opts, &versions, caches)?);
    let (mems, last_seq) = replay_wals_into_memory(opts, &trees, wals)?;
    Ok(Loaded { trees: trees.into_iter().zip(mems).collect(), root_versions: versions, last_seq })
}
