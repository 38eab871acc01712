//! Opening the database the way each command needs: read-only (every
//! keyspace, writing nothing) unless the command writes, never creating one
//! unless `--create` is given, with the options the database records in its
//! OPTIONS file.

use std::path::Path;

use strata::{CompactionStyle, Db, Error, Keyspace, Options};

use crate::{Cli, CliResult};

/// What a command does to the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads (any keyspace): a read-only open, which writes nothing and
    /// works beside a process that has the database open.
    Read,
    /// Writes (or otherwise needs a read-write open: checkpoint, compact).
    Write,
}

/// `--db`, which must name an existing database unless `create`.
pub fn db_dir_for(cli: &Cli, create: bool) -> CliResult<&Path> {
    let dir = cli.db.as_deref().ok_or("this command needs --db <DIR>")?;
    if !create && !dir.is_dir() {
        return Err(format!("no database at {}: not a directory", dir.display()));
    }
    // Checked before opening: a read-write open takes the LOCK (writing a file)
    // before it finds there is no database.
    if !create && !dir.join("CURRENT").exists() {
        return Err(format!("no database at {}: no CURRENT file", dir.display()));
    }
    Ok(dir)
}

/// `--db`, an existing database.
pub fn db_dir(cli: &Cli) -> CliResult<&Path> {
    db_dir_for(cli, false)
}

/// The options of the database in `dir`: those its newest OPTIONS file
/// records, or (a database last opened by an older Strata) the defaults with
/// a warning. A database `--create` is about to create gets `--policy`.
pub fn options(cli: &Cli, dir: &Path) -> CliResult<Options> {
    if !dir.join("CURRENT").exists() {
        let style = CompactionStyle::from_name(cli.policy.as_deref().unwrap_or("leveled"))
            .map_err(|e| e.to_string())?;
        return Ok(Options::default().with_compaction_style(style));
    }
    if cli.policy.is_some() {
        return Err("--policy applies only to a database --create creates; to change the policy of this \
                    one use `policy --set NAME`"
            .into());
    }
    match Options::load_latest(dir) {
        Ok(o) => Ok(o),
        Err(Error::NotADatabase(_)) => {
            eprintln!(
                "strata: warning: {} has no OPTIONS file (last opened by an older Strata): using default options",
                dir.display()
            );
            Ok(Options::default())
        }
        Err(e) => Err(format!("cannot load the options of {}: {e}", dir.display())),
    }
}

/// Opens the database for a command named `what` that does `access`.
pub fn open(cli: &Cli, what: &str, access: Access) -> CliResult<Db> {
    let create = cli.create && access == Access::Write;
    let dir = db_dir_for(cli, create)?;
    if access == Access::Write && cli.read_only {
        return Err(format!("{what} writes to the database and --read-only was given"));
    }
    let opts = options(cli, dir)?.with_create_if_missing(create);
    let db = match access {
        Access::Read => Db::open_read_only(dir, opts),
        Access::Write => Db::open(dir, opts),
    };
    db.map_err(|e| format!("cannot open {}: {e}", dir.display()))
}

/// The `--keyspace` handle.
pub fn keyspace(cli: &Cli, db: &Db) -> CliResult<Keyspace> {
    db.keyspace(&cli.keyspace).map_err(|e| e.to_string())
}
