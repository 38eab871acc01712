//! `strata`: a command-line tool for Strata databases (RocksDB's `ldb` and
//! `sst_dump` in one): point reads and writes, scans, bulk loads, dumps of
//! tables, MANIFESTs and WALs, a checksum verification of every live file,
//! checkpoints, manual compaction and statistics.

mod admin;
mod backup;
mod bytes;
mod dump;
mod kv;
mod open;
mod ops;
mod progress;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Command-line tool for Strata databases.
///
/// Run as `strata <COMMAND> --db <DIR> [options]`. Reading commands (get,
/// scan, stats, properties, policy without --set, list-keyspaces, the dumps,
/// verify, approximate-size) open the database read-only, whatever the keyspace: nothing is
/// written to it, not even a LOCK file, so they also work while an
/// application has it open. `--read-only` refuses every writing command
/// (put, delete, delete-range, load, compact, policy --set, create-keyspace,
/// drop-keyspace, repair, and checkpoint and backup create, which open the
/// database read-write). A database whose merge operator this tool does
/// not have (a custom one) can only be read: get and scan show a key's
/// operands unmerged, labelled. No command creates a database
/// unless `--create` is given (to `put`, `load`). A database opens with the
/// options its newest OPTIONS file records (a damaged newest file is passed
/// over for the previous one; with none, the default database-wide options
/// and a warning); each keyspace keeps the policy and shape its MANIFEST
/// records. Keys and values are text in
/// which `\xNN` is a byte (printed the same way: printable ASCII as is, other
/// bytes and `\` as `\xNN`), or hex with `--hex`. Exit codes: 0 success, 1 an
/// error (or damage found by `verify`), 2 a usage error.
#[derive(Parser, Debug)]
#[command(name = "strata", version, about, long_about)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

/// `--db` and `--read-only`, on every command that opens a database.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DbArg {
    /// The database directory.
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Never write to the database: a writing command is refused (reading
    /// commands never write anyway).
    #[arg(long)]
    pub read_only: bool,
}

/// `--keyspace`.
#[derive(clap::Args, Debug, Clone)]
pub struct KeyspaceArg {
    /// The keyspace to read or write.
    #[arg(long, default_value = "default", value_name = "NAME")]
    pub keyspace: String,
}

/// `--hex`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct HexArg {
    /// Keys and values are given and printed as hex.
    #[arg(long)]
    pub hex: bool,
}

/// `--create` and `--policy`, on the commands that may create a database.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CreateArg {
    /// Create the database if it is missing.
    #[arg(long)]
    pub create: bool,
    /// The compaction policy of a database `--create` creates (default
    /// leveled): leveled, blsm, lsbm, dlsm, tiered, garnering, lwc. An
    /// existing database keeps the policy each keyspace's MANIFEST records;
    /// change it with `policy --set`.
    #[arg(long, value_name = "NAME")]
    pub policy: Option<String>,
}

/// What a command reads or writes: the options it was given, each shown and
/// accepted only on the commands it applies to (the rest keep their defaults).
#[derive(Debug)]
pub struct Cli {
    pub db: Option<PathBuf>,
    pub keyspace: String,
    pub hex: bool,
    pub read_only: bool,
    pub create: bool,
    pub policy: Option<String>,
    pub command: Command,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the value of KEY (exit 1 if it is absent).
    Get {
        key: String,
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        ks: KeyspaceArg,
        #[command(flatten)]
        hex: HexArg,
    },
    /// Store VALUE under KEY.
    Put {
        key: String,
        value: String,
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        ks: KeyspaceArg,
        #[command(flatten)]
        hex: HexArg,
        #[command(flatten)]
        create: CreateArg,
    },
    /// Delete KEY.
    Delete {
        key: String,
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        ks: KeyspaceArg,
        #[command(flatten)]
        hex: HexArg,
    },
    /// Print `key<TAB>value` lines in key order (`--reverse`: descending).
    ///
    /// `--from` and `--to` bound the keys whatever the direction (as ldb):
    /// `--from` inclusive, `--to` exclusive, so `--reverse` walks [from, to)
    /// backwards, starting at the last key below `--to`.
    Scan {
        /// Lowest key (inclusive), in either direction.
        #[arg(long)]
        from: Option<String>,
        /// Key bound (exclusive), in either direction.
        #[arg(long)]
        to: Option<String>,
        /// Only keys starting with this prefix.
        #[arg(long)]
        prefix: Option<String>,
        /// At most this many entries.
        #[arg(long)]
        limit: Option<usize>,
        /// Descending key order: from the last key below --to down to --from.
        #[arg(long)]
        reverse: bool,
        /// Print keys only.
        #[arg(long)]
        no_value: bool,
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        ks: KeyspaceArg,
        #[command(flatten)]
        hex: HexArg,
    },
    /// Load `key<TAB>value` lines (or two CSV columns) from stdin in batches.
    Load {
        /// Read `key,value` lines (fields may be double-quoted).
        #[arg(long)]
        csv: bool,
        /// Entries per write batch.
        #[arg(long, default_value_t = 1000)]
        batch: usize,
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        ks: KeyspaceArg,
        #[command(flatten)]
        hex: HexArg,
        #[command(flatten)]
        create: CreateArg,
    },
    /// Write `key<TAB>value` lines from stdin, in strictly increasing key
    /// order, to a table file for `ingest` (RocksDB ldb `write_extern_sst`).
    WriteSst {
        /// The table file to write.
        file: PathBuf,
        /// Read `key,value` lines (fields may be double-quoted).
        #[arg(long)]
        csv: bool,
        #[command(flatten)]
        hex: HexArg,
    },
    /// Add table files written by `write-sst` (or `SstFileWriter`) to the
    /// keyspace, atomically (RocksDB ldb `ingest_extern_sst`).
    Ingest {
        /// The table files; their keys must not overlap each other.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Remove the files once they are ingested.
        #[arg(long = "move")]
        move_files: bool,
        /// Fail instead of flushing when the memtable holds keys of the files' range.
        #[arg(long)]
        no_blocking_flush: bool,
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        ks: KeyspaceArg,
    },
    /// Print a table file's properties, blocks and filter; `--entries` every entry.
    DumpTable {
        /// The `.sst` file.
        file: PathBuf,
        /// Print every entry (user key, sequence, kind, value).
        #[arg(long)]
        entries: bool,
        #[command(flatten)]
        hex: HexArg,
    },
    /// Print every edit of the live MANIFEST and the levels it leads to.
    DumpManifest {
        /// The directory holding CURRENT (default: --db; `keyspaces/<id>` for a keyspace).
        #[arg(long)]
        dir: Option<PathBuf>,
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        hex: HexArg,
    },
    /// Print every record (a write batch) of a WAL file.
    DumpWal {
        /// The `.log` file.
        file: PathBuf,
        #[command(flatten)]
        hex: HexArg,
    },
    /// Check every live table (each block's checksum), MANIFEST and WAL.
    Verify {
        /// A data path of the default keyspace's tables (`Options::with_db_paths`), besides those the OPTIONS file records; repeatable.
        #[arg(long = "db-path", value_name = "DIR")]
        db_paths: Vec<PathBuf>,
        #[command(flatten)]
        db: DbArg,
    },
    /// Write an openable copy of the database to DEST (opens it read-write).
    Checkpoint {
        dest: PathBuf,
        #[command(flatten)]
        db: DbArg,
    },
    /// Compact the keyspace's key range (all of it by default).
    Compact {
        /// First key.
        #[arg(long)]
        from: Option<String>,
        /// Last key.
        #[arg(long)]
        to: Option<String>,
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        ks: KeyspaceArg,
        #[command(flatten)]
        hex: HexArg,
    },
    /// Print the keyspace's statistics.
    Stats {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        ks: KeyspaceArg,
    },
    /// Print properties (all known ones without NAME).
    Properties {
        names: Vec<String>,
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        ks: KeyspaceArg,
    },
    /// List the keyspaces (reads the MANIFEST only).
    ListKeyspaces {
        #[command(flatten)]
        db: DbArg,
    },
    /// Show each keyspace's compaction policy and what it means; `--set`
    /// changes the policy of `--keyspace` (default: the default keyspace).
    Policy {
        /// The new policy: leveled, blsm, lsbm, dlsm, tiered, garnering, lwc.
        #[arg(long, value_name = "NAME")]
        set: Option<String>,
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        ks: KeyspaceArg,
    },
    /// Rebuild a database that no longer opens from its readable tables and
    /// logs (damaged files move to `lost/`); refused while it is open elsewhere.
    Repair {
        #[command(flatten)]
        db: DbArg,
    },
    /// Create, list, verify, restore, purge or delete backups in a backup directory.
    Backup {
        #[command(subcommand)]
        action: backup::Action,
    },
    /// Create keyspace NAME.
    CreateKeyspace {
        name: String,
        /// The keyspace's compaction policy (default leveled): leveled, blsm,
        /// lsbm, dlsm, tiered, garnering, lwc.
        #[arg(long, value_name = "NAME")]
        policy: Option<String>,
        #[command(flatten)]
        db: DbArg,
    },
    /// Drop keyspace NAME and all its data.
    DropKeyspace {
        name: String,
        #[command(flatten)]
        db: DbArg,
    },
    /// Delete every key in [FROM, TO) of the keyspace.
    DeleteRange {
        from: String,
        to: String,
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        ks: KeyspaceArg,
        #[command(flatten)]
        hex: HexArg,
    },
    /// Print the approximate bytes on disk of the keys in [FROM, TO).
    ApproximateSize {
        from: String,
        to: String,
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        ks: KeyspaceArg,
        #[command(flatten)]
        hex: HexArg,
    },
}

impl Cli {
    /// The settings `command` was given; options it does not take keep their
    /// defaults.
    fn new(command: Command) -> Cli {
        use Command as C;
        let none = DbArg::default();
        let default_ks = KeyspaceArg { keyspace: "default".into() };
        let (no_hex, no_create) = (HexArg::default(), CreateArg::default());
        let (db, ks, hex, create) = match &command {
            C::Get { db, ks, hex, .. }
            | C::Scan { db, ks, hex, .. }
            | C::ApproximateSize { db, ks, hex, .. }
            | C::Delete { db, ks, hex, .. }
            | C::Compact { db, ks, hex, .. }
            | C::DeleteRange { db, ks, hex, .. } => (db, ks, hex, &no_create),
            C::Put { db, ks, hex, create, .. } | C::Load { db, ks, hex, create, .. } => (db, ks, hex, create),
            C::DumpTable { hex, .. } | C::DumpWal { hex, .. } | C::WriteSst { hex, .. } => {
                (&none, &default_ks, hex, &no_create)
            }
            C::Ingest { db, ks, .. } => (db, ks, &no_hex, &no_create),
            C::DumpManifest { db, hex, .. } => (db, &default_ks, hex, &no_create),
            C::Stats { db, ks } | C::Properties { db, ks, .. } | C::Policy { db, ks, .. } => {
                (db, ks, &no_hex, &no_create)
            }
            C::Verify { db, .. }
            | C::ListKeyspaces { db }
            | C::Checkpoint { db, .. }
            | C::Repair { db }
            | C::CreateKeyspace { db, .. }
            | C::DropKeyspace { db, .. } => (db, &default_ks, &no_hex, &no_create),
            C::Backup { action } => match action {
                backup::Action::Create { db, .. } => (db, &default_ks, &no_hex, &no_create),
                _ => (&none, &default_ks, &no_hex, &no_create),
            },
        };
        let policy = match &command {
            C::CreateKeyspace { policy, .. } => policy.clone(),
            _ => create.policy.clone(),
        };
        Cli {
            db: db.db.clone(),
            keyspace: ks.keyspace.clone(),
            hex: hex.hex,
            read_only: db.read_only,
            create: create.create,
            policy,
            command,
        }
    }
}

/// A failure the tool reports in one line.
pub type CliResult<T> = Result<T, String>;

fn main() -> ExitCode {
    // Engine warnings reach stderr; RUST_LOG=info adds flushes and compactions.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::new(Args::parse().command);
    match run(&cli) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("strata: error: {msg}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: &Cli) -> CliResult<ExitCode> {
    match &cli.command {
        Command::Get { .. }
        | Command::Put { .. }
        | Command::Delete { .. }
        | Command::Scan { .. }
        | Command::Load { .. }
        | Command::WriteSst { .. }
        | Command::Ingest { .. } => kv::run(cli),
        Command::DumpTable { file, entries, .. } => {
            dump::table(file, *entries, cli.hex).map(|()| ExitCode::SUCCESS)
        }
        Command::DumpManifest { dir, .. } => {
            let dir = dir.clone().or_else(|| cli.db.clone()).ok_or("dump-manifest needs --dir or --db")?;
            dump::manifest(&dir, cli.hex).map(|()| ExitCode::SUCCESS)
        }
        Command::DumpWal { file, .. } => dump::wal(file, cli.hex).map(|()| ExitCode::SUCCESS),
        Command::Verify { db_paths, .. } => verify::run(open::db_dir(cli)?, db_paths),
        Command::Backup { action } => backup::run(cli, action),
        Command::Repair { .. }
        | Command::CreateKeyspace { .. }
        | Command::DropKeyspace { .. }
        | Command::DeleteRange { .. }
        | Command::ApproximateSize { .. } => ops::run(cli),
        _ => admin::run(cli),
    }
}
