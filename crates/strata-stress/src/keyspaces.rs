//! The keyspaces the soak writes to: the default one (the epoch's policy)
//! and two more under other policies. Each key belongs to one keyspace,
//! chosen from its bytes, so the expected-state logs need no keyspace field
//! and a batch may span keyspaces.

use std::path::Path;

use strata::{CompactionStyle, Db, Keyspace, KeyspaceOptions, Options};

/// Name and policy of the keyspaces besides the default one.
const EXTRA: [(&str, &str); 2] = [("hot", "lsbm"), ("ingest", "lwc")];

/// The keyspace options of `policy`, from the cycle's options (so each cycle
/// tries other sizes) with a fixed level count and the soak's merge operator.
fn ks_options(base: &Options, policy: &str) -> strata::Result<KeyspaceOptions> {
    Ok(KeyspaceOptions::from_options(base)
        .with_compaction_style(CompactionStyle::from_name(policy)?)
        .with_num_levels(5)
        .with_merge_operator(crate::expected::soak_merge_operator()))
}

/// `opts` with the options of every extra keyspace the database at `path`
/// registers (none if it has no `CURRENT` yet), and the registered names
/// (empty then). Reads the root MANIFEST only, so it writes nothing.
pub fn options_for(path: &Path, opts: &Options) -> strata::Result<(Options, Vec<String>)> {
    let existing =
        if path.join("CURRENT").exists() { Db::list_keyspaces_at(path, opts)? } else { Vec::new() };
    let mut with = opts.clone();
    for (name, policy) in EXTRA {
        if existing.iter().any(|n| n == name) {
            with = with.with_keyspace(name, ks_options(opts, policy)?);
        }
    }
    Ok((with, existing))
}

/// `opts` with the options of every extra keyspace, registered or not.
pub fn with_every_keyspace(opts: &Options) -> strata::Result<Options> {
    let mut with = opts.clone();
    for (name, policy) in EXTRA {
        with = with.with_keyspace(name, ks_options(opts, policy)?);
    }
    Ok(with)
}

/// Opens the database at `path` with every keyspace (creating those missing);
/// the handles are indexed as [`keyspace_of`] answers.
pub fn open(path: &Path, opts: Options) -> strata::Result<(Db, Vec<Keyspace>)> {
    let (with, _) = options_for(path, &opts)?;
    let db = Db::open(path, with)?;
    let mut handles = vec![db.default_keyspace()];
    for (name, policy) in EXTRA {
        handles.push(match db.keyspace(name) {
            Ok(h) => h,
            Err(_) => db.create_keyspace(name, ks_options(&opts, policy)?)?,
        });
    }
    Ok((db, handles))
}

/// The index of the keyspace that holds `key`.
pub fn keyspace_of(key: &[u8]) -> usize {
    key.iter().map(|&b| usize::from(b)).sum::<usize>() % (EXTRA.len() + 1)
}
