//! Opening a database: lock, read or create the MANIFEST, replay WALs newer
//! than the recorded log number (into L0 tables, or into the memtables of
//! keyspaces that keep them, see `ks_recovery::replay_wals`), remove files
//! nothing names, and start a fresh WAL and the background threads.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::ks_recovery;
use super::shared::{Caches, Shared, SharedParts};
use super::tree_open::{
    check_files_present, check_wal_present, checked_policy, cut_uncommitted_appends, log_manifest_replayed,
    remove_unreferenced, verify_tables, Parts, TreeCaches,
};
use super::DbInner;
use crate::error::{Error, Result};
use crate::filename::{current_path, lock_path, parse_file_name, wal_path, FileKind};
use crate::info_log::InfoLog;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::paths::TablePaths;
use crate::version::VersionSet;
use crate::wal::LogWriter;

pub(crate) fn open(dir: &Path, opts: Options) -> Result<Arc<DbInner>> {
    let vfs = opts.vfs.clone();
    crate::backup::refuse_incomplete_restore(vfs.as_ref(), dir)?;
    // Options a new database takes as given are refused before anything is
    // created; an existing one's are checked once laid over the recorded ones.
    if !vfs.exists(&current_path(dir)) {
        checked_policy(&opts)?;
    }
    if !vfs.exists(dir) {
        if !opts.create_if_missing {
            return Err(Error::NotADatabase(format!(
                "{} does not exist (create_if_missing is off)",
                dir.display()
            )));
        }
        vfs.create_dir_all(dir)?;
    }
    let entries = vfs.list_dir(dir).map_err(|e| match e {
        Error::Io(io) if io.kind() == std::io::ErrorKind::NotADirectory => {
            Error::NotADatabase(format!("{} is not a directory: {io}", dir.display()))
        }
        other => other,
    })?;
    let lock = vfs.lock(&lock_path(dir))?;
    let info_log =
        opts.info_log.then(|| InfoLog::open(vfs.clone(), dir, opts.info_log_limits(), &entries)).flatten();
    if let Some(l) = &info_log {
        l.line("open", format_args!("Strata {} opening {}", env!("CARGO_PKG_VERSION"), dir.display()));
    }
    crate::options_file::check_at_open(vfs.as_ref(), dir)?;
    let paths = Arc::new(TablePaths::new(dir, &opts.db_paths));
    let located = paths.scan(vfs.as_ref(), true)?;
    let has_current = vfs.exists(&current_path(dir));
    // Every persisted per-tree option the caller did not set keeps its recorded value.
    let opts = if has_current && !opts.error_if_exists {
        super::policy_change::resolve_default(opts, dir)?
    } else {
        opts
    };
    let policy = checked_policy(&opts)?;
    let mut root_log = 0;
    let versions = if has_current {
        if opts.error_if_exists {
            return Err(Error::invalid(format!("{} already exists (error_if_exists)", dir.display())));
        }
        let vs = VersionSet::recover_checked(vfs.clone(), dir, opts.num_levels, |v, log| {
            root_log = log;
            check_files_present(vfs.as_ref(), dir, &paths, v, 0)
        })?;
        // With keyspaces, a cold keyspace's log number may name a WAL that
        // every keyspace has moved past (and that was deleted): only a
        // database that never had keyspaces can insist on it.
        if !vs.ever_had_keyspaces() {
            check_wal_present(vfs.as_ref(), dir, root_log)?;
        }
        log_manifest_replayed("default", &vs);
        vs
    } else {
        // Tables or WALs without CURRENT: data we cannot interpret; never overwrite it.
        let data = entries
            .iter()
            .find(|n| matches!(parse_file_name(n), Some(FileKind::Table(_) | FileKind::Wal(_))));
        if let Some(name) = data {
            return Err(Error::NotADatabase(format!(
                "{} holds {name} but no CURRENT file; refusing to create a database over it",
                dir.display()
            )));
        }
        if let Some((id, path)) = located.first() {
            return Err(Error::NotADatabase(format!(
                "data path {} holds table {id:06}.sst but {} has no CURRENT file; refusing to create a database over it",
                path.display(),
                dir.display()
            )));
        }
        if !opts.create_if_missing {
            return Err(Error::NotADatabase(format!("{} has no CURRENT file", dir.display())));
        }
        // A MANIFEST or temp file alone is what a crash during the first open
        // leaves (CURRENT is installed before any WAL exists): no data, start over.
        for n in &entries {
            if matches!(parse_file_name(n), Some(FileKind::Manifest(_) | FileKind::Temp(_))) {
                vfs.remove_file(&dir.join(n))?;
            }
        }
        log::info!(target: "strata::recovery", "[default] new database created in {}", dir.display());
        VersionSet::create(vfs.clone(), dir, opts.num_levels)?
    };
    versions.set_max_manifest_size(opts.max_manifest_file_size);
    for n in &entries {
        if let Some(FileKind::Wal(k) | FileKind::Table(k) | FileKind::Temp(k) | FileKind::Manifest(k)) =
            parse_file_name(n)
        {
            versions.mark_file_number_used(k)
        }
    }
    for (id, _) in &located {
        versions.mark_file_number_used(*id);
    }
    let caches = Caches::new(&opts);
    let tree_caches = TreeCaches::new(&caches, &paths, &opts);
    cut_uncommitted_appends(vfs.as_ref(), &versions.current(), &tree_caches.tables)?;
    if opts.paranoid_checks {
        verify_tables(vfs.as_ref(), &versions.current(), &tree_caches.tables)?;
    }
    remove_unreferenced("default", dir, vfs.as_ref(), &versions, &entries, &located);
    paths.remove_temps(vfs.as_ref());
    super::policy_change::reconcile_default(
        &versions,
        &opts,
        policy.as_ref(),
        !has_current,
        info_log.as_deref(),
    )?;
    let versions = Arc::new(versions);
    let mut trees = vec![Parts {
        id: 0,
        name: "default".into(),
        dir: dir.to_path_buf(),
        opts: opts.clone(),
        versions: versions.clone(),
        caches: tree_caches,
        policy,
    }];
    let ks_opts = super::policy_change::keyspaces_over_recorded(&opts, &versions)?;
    trees.extend(ks_recovery::recover_keyspaces(dir, &ks_opts, &versions, &caches, info_log.as_deref())?);
    ks_recovery::check_newest_wal(&trees, &entries)?;
    // The new WAL exists (durably) before the edits that retire the old ones.
    let wal_number = versions.new_file_number();
    let wal_file = vfs.create(&wal_path(dir, wal_number))?;
    vfs.sync_dir(dir)?;
    let replayed = ks_recovery::replay_wals(dir, &opts, &trees, &entries, wal_number)?;
    let last_seq = replayed.last_seq;
    // Logs below the floor were replayed into tables every keyspace's
    // MANIFEST names; the others hold memtables kept in memory.
    let mut old_wals = BTreeMap::new();
    for n in &entries {
        if let Some(FileKind::Wal(k)) = parse_file_name(n) {
            let path = wal_path(dir, k);
            if k < replayed.floor {
                let _ = vfs.remove_file(&path);
            } else {
                old_wals.insert(k, vfs.file_size(&path)?);
            }
        }
    }
    let shared = Arc::new(Shared::new(SharedParts {
        dir: dir.to_path_buf(),
        vfs: vfs.clone(),
        root_versions: versions,
        wal: Some(LogWriter::new(wal_file)),
        wal_number,
        lock: Some(lock),
        last_seq,
        max_total_wal_size: opts.max_total_wal_size,
        caches,
        info_log,
        old_wals,
        secondary: None,
    }));
    let inners: Vec<Arc<DbInner>> = (trees.into_iter().zip(replayed.kept))
        .map(|(p, kept)| {
            let (mem, mem_wal) = kept.unwrap_or_else(|| (MemTable::new(), wal_number));
            p.assemble(mem, mem_wal, shared.clone())
        })
        .collect();
    shared.trees.write().extend(inners.iter().map(|t| (t.id, t.clone())));
    if let Err(e) = shared.pool.start(super::pool::workers_for(&opts)) {
        let _ = inners[0].shutdown();
        return Err(e.into());
    }
    for t in &inners {
        if let Err(e) = t.spawn_background() {
            let _ = inners[0].shutdown();
            return Err(e);
        }
    }
    log::info!(
        target: "strata::recovery",
        "[default] database open: {} keyspace(s), last sequence {last_seq}, new WAL {wal_number:06}.log",
        inners.len()
    );
    if let Some(l) = &shared.info_log {
        l.line(
            "open",
            format_args!(
                "open: {} keyspace(s), last sequence {last_seq}, new WAL {wal_number:06}.log",
                inners.len()
            ),
        );
    }
    Ok(inners[0].clone())
}
