//! `backup`: incremental backups of a database (RocksDB's BackupEngine).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use strata::{BackupEngine, BackupId, Error};

use crate::open::{open, Access};
use crate::{Cli, CliResult};

/// What `backup` does.
#[derive(Subcommand, Debug)]
pub enum Action {
    /// Back up the database (--db) into the backup directory (created if
    /// missing); opens the database read-write.
    Create {
        /// The backup directory.
        #[arg(long, value_name = "DIR")]
        backup_dir: PathBuf,
        #[command(flatten)]
        db: crate::DbArg,
    },
    /// List the backups: id, time taken (UTC), files and bytes.
    List {
        /// The backup directory.
        #[arg(long, value_name = "DIR")]
        backup_dir: PathBuf,
    },
    /// Check every file of a backup (all of them without --id) against its
    /// recorded size and checksum; exit 1 if one is damaged.
    Verify {
        /// The backup directory.
        #[arg(long, value_name = "DIR")]
        backup_dir: PathBuf,
        /// The backup's id (`backup list` shows them).
        #[arg(long)]
        id: Option<BackupId>,
    },
    /// Restore a backup (the newest without --id) into DEST, which must be
    /// missing or empty.
    Restore {
        /// The backup directory.
        #[arg(long, value_name = "DIR")]
        backup_dir: PathBuf,
        /// The backup's id (`backup list` shows them).
        #[arg(long)]
        id: Option<BackupId>,
        /// The directory to restore into.
        dest: PathBuf,
    },
    /// Delete the oldest backups until KEEP remain.
    Purge {
        /// The backup directory.
        #[arg(long, value_name = "DIR")]
        backup_dir: PathBuf,
        /// How many of the newest backups to keep.
        #[arg(long)]
        keep: usize,
    },
    /// Delete one backup.
    Delete {
        /// The backup directory.
        #[arg(long, value_name = "DIR")]
        backup_dir: PathBuf,
        /// The backup's id (`backup list` shows them).
        #[arg(long)]
        id: BackupId,
    },
}

/// Opens the backup directory `dir`; only `create` may create it.
fn engine(dir: &Path, create: bool) -> CliResult<BackupEngine> {
    if !create && !dir.join("meta").is_dir() {
        return Err(format!("no backup directory at {}", dir.display()));
    }
    BackupEngine::open(dir).map_err(|e| match e {
        Error::Locked(_) => {
            format!("backup directory {} is in use by another process (its LOCK is held)", dir.display())
        }
        e => format!("cannot open backup directory {}: {e}", dir.display()),
    })
}

/// `id`, or the newest backup.
fn chosen(engine: &BackupEngine, dir: &Path, id: Option<BackupId>) -> CliResult<BackupId> {
    let ids: Vec<BackupId> = engine.get_backup_info().iter().map(|b| b.id).collect();
    match id {
        Some(id) if ids.contains(&id) => Ok(id),
        Some(id) => Err(format!("no backup {id} in {} (backup list shows them)", dir.display())),
        None => ids.last().copied().ok_or_else(|| format!("no backups in {}", dir.display())),
    }
}

/// Runs `backup ACTION`.
pub fn run(cli: &Cli, action: &Action) -> CliResult<ExitCode> {
    let fail = |e: Error| e.to_string();
    match action {
        Action::Create { backup_dir, .. } => {
            if cli.read_only {
                return Err("backup create opens the database read-write and --read-only was given".into());
            }
            let db = open(cli, "backup create", Access::Write)?;
            let id = engine(backup_dir, true)?.create_new_backup(&db).map_err(fail)?;
            db.close().map_err(fail)?;
            println!("backup {id} written to {}", backup_dir.display());
        }
        Action::List { backup_dir } => {
            for b in engine(backup_dir, false)?.get_backup_info() {
                println!("{}\t{}\t{} files\t{} bytes", b.id, utc(b.timestamp), b.num_files, b.size);
            }
        }
        Action::Verify { backup_dir, id } => {
            let engine = engine(backup_dir, false)?;
            let ids = match id {
                Some(_) => vec![chosen(&engine, backup_dir, *id)?],
                None => engine.get_backup_info().iter().map(|b| b.id).collect(),
            };
            let mut damaged = 0;
            for id in ids {
                match engine.verify_backup(id) {
                    Ok(()) => println!("backup {id}: ok"),
                    Err(e) => {
                        damaged += 1;
                        println!("backup {id}: DAMAGED: {e}");
                    }
                }
            }
            if damaged > 0 {
                return Ok(ExitCode::from(1));
            }
        }
        Action::Restore { backup_dir, id, dest } => {
            let engine = engine(backup_dir, false)?;
            let id = chosen(&engine, backup_dir, *id)?;
            engine.restore_db_from_backup(id, dest).map_err(fail)?;
            println!("backup {id} restored to {}", dest.display());
        }
        Action::Purge { backup_dir, keep } => {
            let engine = engine(backup_dir, false)?;
            let before = engine.get_backup_info().len();
            engine.purge_old_backups(*keep).map_err(fail)?;
            println!("deleted {} backups", before - engine.get_backup_info().len());
        }
        Action::Delete { backup_dir, id } => {
            let engine = engine(backup_dir, false)?;
            let id = chosen(&engine, backup_dir, Some(*id))?;
            engine.delete_backup(id).map_err(fail)?;
            println!("deleted backup {id}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(super::utc(1_764_165_000), "2025-11-26 13:50:00 UTC");
    }
}
