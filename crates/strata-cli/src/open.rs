//! Opening the database the way each command needs: read-only (every
//! keyspace, writing nothing) unless the command writes, never creating one
//! unless `--create` is given, with the options the database records in its
//! OPTIONS file.

use std::path::Path;
use std::sync::Arc;

use strata::merge_operators::{builtin_merge_operator, recorded_merge_operators, unmerged_stand_in};
use strata::ttl::{recorded_ttls, TtlDb, TtlKeyspace};
use strata::{CompactionStyle, Db, Error, Keyspace, KeyspaceOptions, Options, RealVfs};

use crate::{Cli, CliResult, Command};

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
    // put and load may create one: say how.
    let hint = match cli.command {
        Command::Put { .. } | Command::Load { .. } => " (add --create to create one)",
        _ => "",
    };
    if !create && !dir.is_dir() {
        return Err(format!("no database at {}: not a directory{hint}", dir.display()));
    }
    // Checked before opening: a read-write open takes the LOCK (writing a file)
    // before it finds there is no database.
    if !create && !dir.join("CURRENT").exists() {
        return Err(format!("no database at {}: no CURRENT file{hint}", dir.display()));
    }
    Ok(dir)
}

/// `--db`, an existing database.
pub fn db_dir(cli: &Cli) -> CliResult<&Path> {
    db_dir_for(cli, false)
}

/// The options of the database in `dir`: those its newest OPTIONS file
/// records, or (a database last opened by an older Strata) the default
/// database-wide options with a warning; each tree keeps its recorded
/// per-tree options either way. A database `--create` is about to create gets `--policy`.
/// A recorded merge operator is rebuilt by name if the engine ships it;
/// any other can only be read (its operands are shown unmerged, see
/// [`unavailable_merge_operator`]), so a command that writes is refused.
pub fn options(cli: &Cli, dir: &Path, access: Access) -> CliResult<Options> {
    if !dir.join("CURRENT").exists() {
        let style = CompactionStyle::from_name(cli.policy.as_deref().unwrap_or("leveled"))
            .map_err(|e| e.to_string())?;
        return Ok(Options::default().with_compaction_style(style));
    }
    if cli.policy.is_some() && !matches!(cli.command, Command::CreateKeyspace { .. }) {
        return Err("--policy applies only to a database --create creates (or a keyspace create-keyspace \
                    creates); to change the policy of this one use `policy --set NAME`"
            .into());
    }
    recorded_options(dir, access)
}

/// The options the newest OPTIONS file of `dir` records (see [`options`]).
pub fn recorded_options(dir: &Path, access: Access) -> CliResult<Options> {
    let (given, fallback) = merge_operators_given(dir, access)?;
    match Options::load_latest_with(dir, &given) {
        Ok(o) => Ok(o),
        Err(Error::NotADatabase(_)) => {
            eprintln!(
                "strata: warning: {} has no OPTIONS file (last opened by an older Strata): using default options",
                dir.display()
            );
            Ok(fallback)
        }
        Err(e) => Err(format!("cannot load the options of {}: {e}", dir.display())),
    }
}

/// The options to load the OPTIONS file of `dir` with: every merge operator
/// it records, the engine's by name, any other (for a read) as the
/// unmerged stand-in; and without an OPTIONS file, the default keyspace's
/// alone (other keyspaces then open with what they recorded).
pub fn merge_operators_given(dir: &Path, access: Access) -> CliResult<(Options, Options)> {
    let base = Options::default().with_vfs(Arc::new(RealVfs::new()));
    let (mut given, mut fallback) = (base.clone(), base.clone());
    // A MANIFEST that cannot be read is reported by the open itself.
    for (ks, name) in recorded_merge_operators(dir, &base).unwrap_or_default() {
        let op = match builtin_merge_operator(&name) {
            Some(op) => op,
            None if access == Access::Write => {
                return Err(format!(
                    "keyspace {ks:?} of {} uses the merge operator {name:?}, which this tool does not have: \
                     reading commands work (showing that keyspace's merge operands unmerged), but no command \
                     may write to this database",
                    dir.display()
                ))
            }
            None => unmerged_stand_in(&name),
        };
        if ks == "default" {
            given = given.with_merge_operator(op.clone());
            fallback = fallback.with_merge_operator(op);
        } else {
            given = given.with_keyspace(ks, KeyspaceOptions::default().with_merge_operator(op));
        }
    }
    Ok((given, fallback))
}

/// The name of the merge operator of `ks` when this tool does not have it
/// (the keyspace then reads through a stand-in that returns operands
/// unmerged).
pub fn unavailable_merge_operator(ks: &Keyspace) -> Option<String> {
    ks.options().merge_operator_name().filter(|n| builtin_merge_operator(n).is_none()).map(str::to_string)
}

/// Opens the database for a command named `what` that does `access`.
pub fn open(cli: &Cli, what: &str, access: Access) -> CliResult<Db> {
    let create = cli.create && access == Access::Write;
    let dir = db_dir_for(cli, create)?;
    if access == Access::Write && cli.read_only {
        return Err(format!("{what} writes to the database and --read-only was given"));
    }
    let opts = options(cli, dir, access)?.with_create_if_missing(create);
    let ttl = !create && ttl_database(dir);
    let db = match (access, ttl) {
        // Commands that read no values see its trees as stored.
        (Access::Read, true) => TtlDb::open_read_only(dir, opts).map(TtlDb::into_base_db),
        (Access::Read, false) => Db::open_read_only(dir, opts),
        (Access::Write, true) => {
            return Err(format!(
                "{what}: {} is a TTL database (each value stamped with its write time): this tool only \
                 reads it (get, scan); write to it with strata::ttl::TtlDb",
                dir.display()
            ))
        }
        (Access::Write, false) => Db::open(dir, opts),
    };
    db.map_err(|e| format!("cannot open {}: {e}", dir.display()))
}

/// Whether the database in `dir` records values with TTL stamps (its
/// default keyspace does whenever any keyspace does).
fn ttl_database(dir: &Path) -> bool {
    let base = Options::default().with_vfs(Arc::new(RealVfs::new()));
    // A MANIFEST that cannot be read is reported by the open itself.
    recorded_ttls(dir, &base).is_ok_and(|t| !t.is_empty())
}

/// A database opened for a command that reads values: a TTL database
/// through `TtlDb`, so values come without their stamps.
pub enum ValueDb {
    Plain(Db),
    Ttl(TtlDb),
}

/// One keyspace of a [`ValueDb`].
pub enum Tree {
    Plain(Keyspace),
    Ttl(TtlKeyspace),
}

/// Opens the database read-only for a command named `what` that reads values.
pub fn open_values(cli: &Cli, what: &str) -> CliResult<ValueDb> {
    let dir = db_dir(cli)?;
    if !ttl_database(dir) {
        return open(cli, what, Access::Read).map(ValueDb::Plain);
    }
    let opts = options(cli, dir, Access::Read)?;
    TtlDb::open_read_only(dir, opts)
        .map(ValueDb::Ttl)
        .map_err(|e| format!("cannot open {}: {e}", dir.display()))
}

/// The `--keyspace` tree of `db`: a TTL database's plain keyspaces read as stored.
pub fn tree(cli: &Cli, db: &ValueDb) -> CliResult<Tree> {
    match db {
        ValueDb::Plain(db) => keyspace(cli, db).map(Tree::Plain),
        ValueDb::Ttl(db) => match db.keyspace(&cli.keyspace) {
            Ok(ks) => Ok(Tree::Ttl(ks)),
            Err(Error::InvalidArgument(_)) => keyspace(cli, db.base_db()).map(Tree::Plain),
            Err(e) => Err(e.to_string()),
        },
    }
}

/// The `--keyspace` handle.
pub fn keyspace(cli: &Cli, db: &Db) -> CliResult<Keyspace> {
    db.keyspace(&cli.keyspace).map_err(|e| e.to_string())
}
