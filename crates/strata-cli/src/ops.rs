//! repair, create-keyspace, drop-keyspace, delete-range and approximate-size.

use std::process::ExitCode;

use strata::{CompactionStyle, Error, KeyspaceOptions};

use crate::bytes::{parse, show};
use crate::open::{keyspace, open, recorded_options, Access};
use crate::{Cli, CliResult, Command};

/// Runs one of these commands.
pub fn run(cli: &Cli) -> CliResult<ExitCode> {
    let fail = |e: Error| e.to_string();
    let key = |s: &str| parse(s, cli.hex);
    match &cli.command {
        Command::Repair { .. } => repair(cli)?,
        Command::CreateKeyspace { name, .. } => {
            let style = CompactionStyle::from_name(cli.policy.as_deref().unwrap_or("leveled"))
                .map_err(|e| e.to_string())?;
            let db = open(cli, "create-keyspace", Access::Write)?;
            db.create_keyspace(name, KeyspaceOptions::default().with_compaction_style(style.clone()))
                .map_err(fail)?;
            db.close().map_err(fail)?;
            println!("created keyspace {name:?} (policy {})", style.name());
        }
        Command::DropKeyspace { name, .. } => {
            let db = open(cli, "drop-keyspace", Access::Write)?;
            if !db.list_keyspaces().contains(name) {
                return Err(format!("no keyspace {name:?} (list-keyspaces shows them)"));
            }
            db.drop_keyspace(name).map_err(fail)?;
            db.close().map_err(fail)?;
            println!("dropped keyspace {name:?}");
        }
        Command::DeleteRange { from, to, .. } => {
            let (from, to) = (key(from)?, key(to)?);
            if from >= to {
                return Err(format!(
                    "empty range: FROM ({}) must sort before TO ({})",
                    show(&from, cli.hex),
                    show(&to, cli.hex)
                ));
            }
            let db = open(cli, "delete-range", Access::Write)?;
            keyspace(cli, &db)?.delete_range(&from, &to).map_err(fail)?;
            db.close().map_err(fail)?;
        }
        Command::ApproximateSize { from, to, .. } => {
            let (from, to) = (key(from)?, key(to)?);
            let db = open(cli, "approximate-size", Access::Read)?;
            let sizes =
                keyspace(cli, &db)?.approximate_sizes(&[(from.as_slice(), to.as_slice())]).map_err(fail)?;
            println!("{}", sizes[0]);
        }
        _ => return Err("not an operations command".into()),
    }
    Ok(ExitCode::SUCCESS)
}

/// `strata::repair` with the options the database records.
fn repair(cli: &Cli) -> CliResult<()> {
    let dir = cli.db.as_deref().ok_or("this command needs --db <DIR>")?;
    if cli.read_only {
        return Err("repair writes to the database and --read-only was given".into());
    }
    if cli.policy.is_some() {
        return Err("--policy does not apply to repair: each keyspace keeps its recorded policy".into());
    }
    if !dir.is_dir() {
        return Err(format!("no database at {}: not a directory", dir.display()));
    }
    let opts = recorded_options(dir, Access::Write)?;
    match strata::repair(dir, opts) {
        Ok(report) => {
            println!("{report}");
            Ok(())
        }
        Err(Error::Locked(_)) => Err(format!(
            "{} is open in another process (its LOCK is held): stop that process, then run repair again",
            dir.display()
        )),
        Err(e) => Err(format!("cannot repair {}: {e}", dir.display())),
    }
}
