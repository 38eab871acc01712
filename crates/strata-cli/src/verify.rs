//! verify: reads every live file of every keyspace — each table block with its
//! checksum checked, every MANIFEST record, every WAL record — and lists what
//! is damaged. Writes nothing. A torn last record of a WAL or MANIFEST is
//! what a crash leaves (recovery drops it): it is noted, not damage, unless
//! the engine had already acted on that record (see `judge`). Tables are
//! looked for in the data paths the OPTIONS file records and `--db-path`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use strata::filename::{manifest_path, parse_file_name, table_path, FileKind};
use strata::table::{verify_table, Expected, Table};
use strata::version::{read_current, VersionEdit, VersionSet};
use strata::vfs::RandomOpenOptions;
use strata::wal::{check_needed_wals, check_recorded_wals, LogReader, TreeLog};
use strata::{Options, RealVfs, Vfs, WalRecoveryMode, WriteBatch};

use crate::progress::Progress;
use crate::CliResult;

/// One file to check.
enum Check {
    /// The MANIFEST of tree `tree` (an index into the trees checked).
    Manifest {
        path: PathBuf,
        tree: usize,
    },
    Table {
        path: PathBuf,
        id: u64,
        size: u64,
        segments: Vec<strata::table::SegmentMeta>,
        tree: usize,
    },
    Wal {
        path: PathBuf,
        number: u64,
        len: u64,
    },
}

impl Check {
    fn path(&self) -> &Path {
        match self {
            Check::Manifest { path, .. } | Check::Wal { path, .. } | Check::Table { path, .. } => path,
        }
    }
}

/// What checking one file found.
enum Found {
    Clean,
    /// A log whose last record was dropped as torn (`bytes` long).
    TornTail {
        bytes: u64,
    },
    /// A live table that is not there.
    Missing,
}

/// Where a table of the tree in `dir` is: the directory itself, else the
/// first data path holding it (the engine's own placement is by size, so
/// every path is searched); the directory's name if none has it.
fn find_table(vfs: &dyn Vfs, dir: &Path, data_paths: &[PathBuf], id: u64) -> PathBuf {
    let home = table_path(dir, id);
    if vfs.exists(&home) {
        return home;
    }
    data_paths.iter().map(|d| table_path(d, id)).find(|p| vfs.exists(p)).unwrap_or(home)
}

/// The files of the tree in `dir` (its MANIFEST and live tables, looked for
/// in `dir` and `data_paths`); a MANIFEST that cannot be read is damage (and
/// hides the tables it would list).
fn tree_files(
    vfs: &Arc<dyn Vfs>,
    dir: &Path,
    data_paths: &[PathBuf],
    out: &mut Vec<Check>,
    damaged: &mut Vec<String>,
) -> Option<VersionSet> {
    let tree = out.iter().filter(|c| matches!(c, Check::Manifest { .. })).count();
    let number = match read_current(&**vfs, dir) {
        Ok(n) => n,
        Err(e) => {
            damaged.push(format!("{}: {e}", dir.join("CURRENT").display()));
            return None;
        }
    };
    out.push(Check::Manifest { path: manifest_path(dir, number), tree });
    let set = match VersionSet::load_read_only(Arc::clone(vfs), dir, 64, |_, _| Ok(())) {
        Ok(s) => s,
        Err(e) => {
            damaged.push(format!("{}: {e}", manifest_path(dir, number).display()));
            return None;
        }
    };
    let mut files = set.current().live_files();
    files.sort_by_key(|f| f.id);
    files.dedup_by_key(|f| f.id);
    for f in files {
        out.push(Check::Table {
            path: find_table(&**vfs, dir, data_paths, f.id),
            id: f.id,
            size: f.size,
            segments: f.segments.clone(),
            tree,
        });
    }
    Some(set)
}

/// Reads every record of a log (WAL or MANIFEST) with `decode`; a dropped
/// last record is reported for the caller to judge (a crash during an append
/// leaves one).
fn check_log(
    vfs: &dyn Vfs,
    p: &Path,
    decode: impl Fn(Vec<u8>) -> strata::Result<()>,
) -> strata::Result<Found> {
    let mut r = LogReader::new(vfs.open_sequential(p)?, WalRecoveryMode::TolerateCorruptedTailRecords);
    while let Some(rec) = r.read_record()? {
        decode(rec)?;
    }
    Ok(match r.dropped_bytes() {
        0 => Found::Clean,
        bytes => Found::TornTail { bytes },
    })
}

/// Checks one file.
fn check(vfs: &dyn Vfs, c: &Check) -> strata::Result<Found> {
    match c {
        Check::Manifest { path, .. } => check_log(vfs, path, |rec| VersionEdit::decode(&rec).map(|_| ())),
        Check::Table { path, id, size, segments, .. } => {
            if !vfs.exists(path) {
                return Ok(Found::Missing);
            }
            let file = vfs.open_random(path, RandomOpenOptions::default())?;
            if file.len() != *size {
                return Err(strata::Error::corruption(format!(
                    "file is {} bytes, the MANIFEST says {size}",
                    file.len()
                )));
            }
            let table = Arc::new(Table::open_segments(file, *id, *size, segments, None)?);
            // The engine's own read-back of a new table; the MANIFEST records no entry count.
            verify_table(&table, &Expected::default())?;
            Ok(Found::Clean)
        }
        Check::Wal { path, .. } => check_log(vfs, path, |rec| {
            for op in WriteBatch::from_data(rec)?.iter() {
                op?;
            }
            Ok(())
        }),
    }
}

/// Turns what each check found into notes and damage. A dropped last record
/// is what a crash leaves, except where the engine had already acted on it:
/// - a MANIFEST whose tree lacks a live table: a table is deleted only after
///   the record removing it is durable, so that record was whole once;
/// - a WAL with a newer WAL holding bytes: the engine syncs a WAL before it
///   writes to the next one.
fn judge(results: Vec<(Check, strata::Result<Found>)>, notes: &mut Vec<String>, damaged: &mut Vec<String>) {
    let missing_in = |tree: usize| {
        results
            .iter()
            .any(|(c, r)| matches!((c, r), (Check::Table { tree: t, .. }, Ok(Found::Missing)) if *t == tree))
    };
    let torn_manifest = |tree: usize| {
        results
            .iter()
            .any(|(c, r)| matches!((c, r), (Check::Manifest { tree: t, .. }, Ok(Found::TornTail { .. })) if *t == tree))
    };
    let newest_wal_with_bytes = results
        .iter()
        .filter_map(|(c, _)| match c {
            Check::Wal { number, len, .. } if *len > 0 => Some(*number),
            _ => None,
        })
        .max();
    for (c, r) in &results {
        let p = c.path().display();
        match (c, r) {
            (_, Ok(Found::Clean)) => {}
            (_, Err(e)) => damaged.push(format!("{p}: {e}")),
            (Check::Manifest { tree, .. }, Ok(Found::TornTail { bytes })) if missing_in(*tree) => damaged.push(format!(
                "{p}: corruption: its last record ({bytes} bytes) is unreadable, and without it the MANIFEST \
                 lists a table that is gone; tables are deleted only after that record is durable, so it was \
                 written whole and is damaged (repair rebuilds the MANIFEST)"
            )),
            (Check::Wal { number, .. }, Ok(Found::TornTail { bytes }))
                if newest_wal_with_bytes.is_some_and(|n| n > *number) =>
            {
                damaged.push(format!(
                    "{p}: corruption: its last record ({bytes} bytes) is unreadable, but a newer WAL holds \
                     writes; a WAL is synced before the next one is written, so this is damage, not a torn write"
                ))
            }
            (_, Ok(Found::TornTail { bytes })) => notes.push(format!(
                "{p}: a torn last record of {bytes} bytes (a crash during an append; not damage)"
            )),
            (Check::Table { tree, .. }, Ok(Found::Missing)) if torn_manifest(*tree) => notes.push(format!(
                "{p}: not there, as the MANIFEST's damaged last record recorded (see that MANIFEST)"
            )),
            (_, Ok(Found::Missing)) => damaged.push(format!(
                "{p}: corruption: live table missing (looked in the database directory and every --db-path)"
            )),
        }
    }
}

/// Runs `verify` on the database in `dir`.
pub fn run(dir: &Path, given_paths: &[PathBuf]) -> CliResult<ExitCode> {
    // The data paths the OPTIONS file records, and any given.
    let mut data_paths = given_paths.to_vec();
    let given = crate::open::merge_operators_given(dir, crate::open::Access::Read).map(|(g, _)| g);
    if let Ok(opts) = given.and_then(|g| Options::load_latest_with(dir, &g).map_err(|e| e.to_string())) {
        data_paths.extend(opts.db_paths().iter().filter(|p| !given_paths.contains(p)).cloned());
    }
    let data_paths = data_paths.as_slice();
    let vfs: Arc<dyn Vfs> = Arc::new(RealVfs::new());
    let mut checks = Vec::new();
    let mut damaged = Vec::new();
    let mut notes = Vec::new();
    if !vfs.exists(&dir.join("CURRENT")) {
        return Err(format!("no database at {}: no CURRENT file", dir.display()));
    }
    let mut names = vfs.list_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    names.sort();
    let mut wals = Vec::new();
    for name in names {
        if let Some(FileKind::Wal(number)) = parse_file_name(&name) {
            let path = dir.join(name);
            let len = vfs.file_size(&path).unwrap_or(0);
            wals.push(Check::Wal { path, number, len });
        }
    }
    let present: Vec<u64> = wals
        .iter()
        .filter_map(|c| match c {
            Check::Wal { number, .. } => Some(*number),
            _ => None,
        })
        .collect();
    if let Some(root) = tree_files(&vfs, dir, data_paths, &mut checks, &mut damaged) {
        let mut logs = vec![("default".to_string(), root.log_number())];
        for (id, entry) in root.keyspaces() {
            // Keyspaces keep their tables in their own directory (data paths do not apply).
            let ks =
                tree_files(&vfs, &dir.join("keyspaces").join(id.to_string()), &[], &mut checks, &mut damaged);
            logs.extend(ks.map(|v| (entry.name.clone(), v.log_number())));
        }
        // A removed WAL, as open would refuse it.
        let trees: Vec<TreeLog<'_>> =
            logs.iter().map(|(k, l)| TreeLog { keyspace: k, log_number: *l }).collect();
        let checked = check_needed_wals(&trees, root.ever_had_keyspaces(), root.wal_floor(), &present)
            .and_then(|()| check_recorded_wals(&root.recorded_wals(), &present, true));
        if let Err(e) = checked {
            damaged.push(format!("{}: {e}", dir.display()));
        }
    }
    checks.extend(wals);
    let total = checks.len();
    let progress = Progress::new("verify", Some(total as u64));
    let mut results = Vec::with_capacity(total);
    for (i, c) in checks.into_iter().enumerate() {
        let found = check(&*vfs, &c);
        results.push((c, found));
        progress.set(i as u64 + 1);
    }
    progress.finish(total as u64);
    judge(results, &mut notes, &mut damaged);
    for n in &notes {
        println!("NOTE {n}");
    }
    for d in &damaged {
        println!("DAMAGED {d}");
    }
    println!("{total} files checked, {} damaged", damaged.len());
    Ok(if damaged.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
