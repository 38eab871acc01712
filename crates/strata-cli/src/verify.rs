//! verify: reads every live file of every keyspace — each table block with its
//! checksum checked, every MANIFEST record, every WAL record — and lists what
//! is damaged. Writes nothing. A torn last record of a WAL or MANIFEST is
//! what a crash leaves (recovery drops it): it is noted, not damage. Tables
//! are looked for in the data paths the OPTIONS file records and `--db-path`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use strata::filename::{manifest_path, parse_file_name, table_path, FileKind};
use strata::iter::InternalIterator;
use strata::table::{BlockReadOptions, Table};
use strata::version::{read_current, VersionEdit, VersionSet};
use strata::vfs::RandomOpenOptions;
use strata::wal::LogReader;
use strata::{Options, RealVfs, Vfs, WalRecoveryMode, WriteBatch};

use crate::progress::Progress;
use crate::CliResult;

/// One file to check.
enum Check {
    Manifest(PathBuf),
    Table { path: PathBuf, id: u64, size: u64, segments: Vec<strata::table::SegmentMeta> },
    Wal(PathBuf),
}

impl Check {
    fn path(&self) -> &Path {
        match self {
            Check::Manifest(p) | Check::Wal(p) | Check::Table { path: p, .. } => p,
        }
    }
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
    let number = match read_current(&**vfs, dir) {
        Ok(n) => n,
        Err(e) => {
            damaged.push(format!("{}: {e}", dir.join("CURRENT").display()));
            return None;
        }
    };
    out.push(Check::Manifest(manifest_path(dir, number)));
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
        });
    }
    Some(set)
}

/// Reads every record of a log (WAL or MANIFEST) with `decode`; a torn last
/// record (what a crash during an append leaves) is not damage, but is noted.
fn check_log(
    vfs: &dyn Vfs,
    p: &Path,
    decode: impl Fn(Vec<u8>) -> strata::Result<()>,
) -> strata::Result<Option<String>> {
    let mut r = LogReader::new(vfs.open_sequential(p)?, WalRecoveryMode::TolerateCorruptedTailRecords);
    while let Some(rec) = r.read_record()? {
        decode(rec)?;
    }
    Ok((r.dropped_bytes() > 0).then(|| {
        format!(
            "{}: a torn last record of {} bytes (a crash during an append; not damage)",
            p.display(),
            r.dropped_bytes()
        )
    }))
}

/// Checks one file; `Ok(Some(note))` is a remark that is not damage.
fn check(vfs: &dyn Vfs, c: &Check) -> strata::Result<Option<String>> {
    match c {
        Check::Manifest(p) => check_log(vfs, p, |rec| VersionEdit::decode(&rec).map(|_| ())),
        Check::Table { path, id, size, segments } => {
            if !vfs.exists(path) {
                return Err(strata::Error::corruption(
                    "live table missing (looked in the database directory and every --db-path)",
                ));
            }
            let file = vfs.open_random(path, RandomOpenOptions::default())?;
            if file.len() != *size {
                return Err(strata::Error::corruption(format!(
                    "file is {} bytes, the MANIFEST says {size}",
                    file.len()
                )));
            }
            let table = Arc::new(Table::open_segments(file, *id, *size, segments, None)?);
            let opts = BlockReadOptions {
                verify_checksums: true,
                fill_cache: false,
                readahead: 1 << 20,
                prefetch: false,
            };
            let mut it = table.iter(opts);
            it.seek_to_first()?;
            while it.valid() {
                it.next()?;
            }
            Ok(None)
        }
        Check::Wal(p) => check_log(vfs, p, |rec| {
            for op in WriteBatch::from_data(rec)?.iter() {
                op?;
            }
            Ok(())
        }),
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
    if let Some(root) = tree_files(&vfs, dir, data_paths, &mut checks, &mut damaged) {
        for (id, _) in root.keyspaces() {
            // Keyspaces keep their tables in their own directory (data paths do not apply).
            tree_files(&vfs, &dir.join("keyspaces").join(id.to_string()), &[], &mut checks, &mut damaged);
        }
    }
    let mut names = vfs.list_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    names.sort();
    for name in names {
        if let Some(FileKind::Wal(_)) = parse_file_name(&name) {
            checks.push(Check::Wal(dir.join(name)));
        }
    }
    let progress = Progress::new("verify", Some(checks.len() as u64));
    for (i, c) in checks.iter().enumerate() {
        match check(&*vfs, c) {
            Ok(None) => {}
            Ok(Some(note)) => notes.push(note),
            Err(e) => damaged.push(format!("{}: {e}", c.path().display())),
        }
        progress.set(i as u64 + 1);
    }
    progress.finish(checks.len() as u64);
    for n in &notes {
        println!("NOTE {n}");
    }
    for d in &damaged {
        println!("DAMAGED {d}");
    }
    println!("{} files checked, {} damaged", checks.len(), damaged.len());
    Ok(if damaged.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
