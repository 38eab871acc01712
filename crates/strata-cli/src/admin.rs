//! checkpoint, compact, stats, properties, list-keyspaces and policy.

use std::process::ExitCode;

use strata::{CompactionStyle, Db, Keyspace, Options};

use crate::bytes::parse;
use crate::open::{db_dir, keyspace, open, options, Access};
use crate::{Cli, CliResult, Command};

/// The one call of `Keyspace::property`, so a change of its signature is a
/// one-line fix here.
fn property(ks: &Keyspace, name: &str) -> CliResult<String> {
    ks.property(name).map_err(|e| e.to_string())
}

/// What each built-in policy does, in one paragraph.
fn describe(policy: &str) -> &'static str {
    match policy {
        "leveled" => {
            "Leveled (LevelDB/RocksDB style): each level below L0 is one sorted run ten times (by default) \
            larger than the one above; a full level merges a file into its overlaps in the next. Low space \
            and read amplification, the most rewriting."
        }
        "blsm" => {
            "bLSM: leveled levels of two runs each, one receiving merges from above and the previous \
            full one draining into the next level a file at a time whenever the level is full (dLSM's \
            two-phase compaction, scheduled as LevelDB schedules), so a draining file's cached blocks \
            stay useful until it goes."
        }
        "lsbm" => {
            "LSbM: bLSM plus a compaction buffer per level: the files a merge consumed stay readable \
            (appended to the receiving run's buffer, no extra I/O) so cached blocks keep serving range \
            reads after compactions; buffered files whose blocks are no longer cached are trimmed."
        }
        "dlsm" => {
            "dLSM: LSbM's compaction buffers without the cache-driven trim, with more bloom bits on \
            the levels that feed a buffer."
        }
        "tiered" => {
            "Tiered (stepped merge): each level collects several overlapping sorted runs and merges \
            them all into one new run of the next level once it has enough. Least rewriting \
            (write-optimized); reads probe more runs."
        }
        "garnering" => {
            "Garnering (the Autumn paper): leveling whose level size ratios grow with the data, \
            so the same data fits in fewer levels and reads pass fewer of them."
        }
        "lwc" => {
            "Light-weight compaction (LWC-tree): a merge appends the upper table's data to the overlapping \
            lower tables as new segments instead of rewriting them; a table with too many segments is \
            rewritten. Less rewriting than leveled, with leveled's shape."
        }
        _ => "A policy this tool does not know (a custom policy).",
    }
}

/// Runs one of the administrative commands.
pub fn run(cli: &Cli) -> CliResult<ExitCode> {
    let fail = |e: strata::Error| e.to_string();
    match &cli.command {
        Command::Checkpoint { dest, .. } => {
            let db = open(cli, "checkpoint", Access::Write)?;
            db.checkpoint(dest).map_err(fail)?;
            db.close().map_err(fail)?;
            println!("checkpoint written to {}", dest.display());
        }
        Command::Compact { from, to, .. } => {
            let from = from.as_deref().map(|k| parse(k, cli.hex)).transpose()?;
            let to = to.as_deref().map(|k| parse(k, cli.hex)).transpose()?;
            let db = open(cli, "compact", Access::Write)?;
            keyspace(cli, &db)?.compact_range(from.as_deref(), to.as_deref()).map_err(fail)?;
            db.close().map_err(fail)?;
        }
        Command::Stats { .. } => {
            let db = open(cli, "stats", Access::Read)?;
            println!("{}", property(&keyspace(cli, &db)?, "strata.stats")?);
        }
        Command::Properties { names, .. } => {
            let db = open(cli, "properties", Access::Read)?;
            let ks = keyspace(cli, &db)?;
            // Every name once: the `rocksdb.` aliases repeat `strata.` ones.
            let all: Vec<String> =
                ks.property_names().into_iter().filter(|n| n.starts_with("strata.")).collect();
            for name in if names.is_empty() { &all } else { names } {
                println!("{name}:\n{}\n", property(&ks, name)?);
            }
        }
        Command::ListKeyspaces { .. } => {
            let dir = db_dir(cli)?;
            for name in Db::list_keyspaces_at(dir, &Options::default()).map_err(fail)? {
                println!("{name}");
            }
        }
        Command::Policy { set: Some(name), .. } => set_policy(cli, name)?,
        Command::Policy { set: None, .. } => {
            let db = open(cli, "policy", Access::Read)?;
            for name in db.list_keyspaces() {
                let ks = db.keyspace(&name).map_err(fail)?;
                let policy = property(&ks, "strata.policy")?;
                println!("{name}: {policy}\n  {}", describe(&policy));
            }
        }
        _ => return Err("not an administrative command".into()),
    }
    Ok(ExitCode::SUCCESS)
}

/// What moving from policy `old` to `new` does to the tree that is there.
fn transition_notes(old: &str, new: &str) -> Vec<&'static str> {
    let mut notes = Vec::new();
    let buffered = |p: &str| p == "lsbm" || p == "dlsm";
    if buffered(old) && !buffered(new) {
        notes.push("LSbM compaction buffers are dropped.");
    }
    if old == "lwc" && new != "lwc" {
        notes.push("DTable segments are merged away as tables are rewritten.");
    }
    if new == "garnering" {
        notes.push("Garnering's level count is derived from the deepest level in use.");
    }
    if old == "tiered" && new != "tiered" {
        notes.push("Extra runs of tiered levels are merged down.");
    }
    notes
}

/// `policy --set NAME`: reopens the database read-write with its loaded
/// options and the new policy for `--keyspace`, then closes it.
fn set_policy(cli: &Cli, name: &str) -> CliResult<()> {
    if cli.read_only {
        return Err("policy --set writes to the database and --read-only was given".into());
    }
    let style = CompactionStyle::from_name(name).map_err(|e| e.to_string())?;
    let dir = db_dir(cli)?;
    let loaded = options(cli, dir, Access::Write)?;
    let (old, opts) = if cli.keyspace == "default" {
        (loaded.compaction_style().name(), loaded.clone().with_compaction_style(style.clone()))
    } else {
        let ks = loaded
            .keyspace_options(&cli.keyspace)
            .cloned()
            .ok_or_else(|| format!("no keyspace {:?} in the options of {}", cli.keyspace, dir.display()))?;
        let old = ks.compaction_style().name();
        (old, loaded.clone().with_keyspace(cli.keyspace.clone(), ks.with_compaction_style(style.clone())))
    };
    let db =
        Db::open(dir, opts).map_err(|e| format!("cannot open {} with policy {name}: {e}", dir.display()))?;
    let now = property(&keyspace(cli, &db)?, "strata.policy")?;
    db.close().map_err(|e| e.to_string())?;
    if old == now {
        println!("{}: already {now}", cli.keyspace);
        return Ok(());
    }
    println!("{}: {old} -> {now}\n  {}", cli.keyspace, describe(&now));
    for note in transition_notes(&old, &now) {
        println!("  {note}");
    }
    Ok(())
}
