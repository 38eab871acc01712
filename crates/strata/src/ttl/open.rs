//! Opening a [`TtlDb`]: what the root MANIFEST records of each tree's TTL
//! decides which trees hold stamped values, each gets its TTL and its
//! compaction filter, and mixing stamped and plain values is refused.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use super::clock::Clock;
use super::filter::TtlFilter;
use super::keyspace::TtlKeyspace;
use super::value::Expiry;
use super::TtlDb;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::filename::current_path;
use crate::options::kinds::MAX_LEVELS;
use crate::options::{KeyspaceOptions, Options};
use crate::version::VersionSet;

/// How a [`TtlDb`] is opened.
pub(super) enum Mode<'a> {
    /// The default keyspace's TTL, and keyspaces given another TTL.
    ReadWrite { ttl: Duration, keyspaces: &'a [(&'a str, Duration)] },
    /// Every tree with its recorded TTL.
    ReadOnly,
}

/// What the root MANIFEST records: the default tree's options (`None`
/// before options were recorded) and every keyspace's (id, name, options).
struct Recorded {
    default: Option<KeyspaceOptions>,
    keyspaces: Vec<(u32, String, KeyspaceOptions)>,
}

fn read_recorded(path: &Path, opts: &Options) -> Result<Option<Recorded>> {
    if !opts.vfs.exists(&current_path(path)) {
        return Ok(None);
    }
    let versions = VersionSet::load_read_only(opts.vfs.clone(), path, MAX_LEVELS, |_, _| Ok(()))?;
    let decode = |bytes: &[u8], whose: &str| {
        KeyspaceOptions::decode(bytes).map(|(o, _)| o).map_err(|e| Error::corruption(format!("{whose}: {e}")))
    };
    let default = versions.default_options().map(|b| decode(&b, "the default keyspace")).transpose()?;
    let mut keyspaces = Vec::new();
    for (id, e) in versions.keyspaces() {
        let o = decode(&e.options, &format!("keyspace {:?}", e.name))?;
        keyspaces.push((id, e.name, o));
    }
    Ok(Some(Recorded { default, keyspaces }))
}

/// The TTL each tree of the database at `path` records, `"default"` first;
/// trees of plain values are left out. Reads the root MANIFEST, writes
/// nothing (tools use it to choose between [`Db`] and [`TtlDb`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use strata::ttl::{recorded_ttls, TtlDb};
/// use strata::Options;
///
/// let dir = tempfile::tempdir()?;
/// TtlDb::open(dir.path(), Options::default(), Duration::from_secs(60))?.close()?;
/// assert_eq!(recorded_ttls(dir.path(), &Options::default())?, [("default".to_string(), Duration::from_secs(60))]);
/// # Ok::<(), strata::Error>(())
/// ```
pub fn recorded_ttls(path: impl AsRef<Path>, opts: &Options) -> Result<Vec<(String, Duration)>> {
    let Some(r) = read_recorded(path.as_ref(), opts)? else {
        return Err(Error::NotADatabase(format!("{} has no CURRENT file", path.as_ref().display())));
    };
    let mut out = Vec::new();
    if let Some(ttl) = r.default.as_ref().and_then(KeyspaceOptions::ttl) {
        out.push(("default".to_string(), ttl));
    }
    out.extend(r.keyspaces.into_iter().filter_map(|(_, name, o)| o.ttl().map(|t| (name, t))));
    Ok(out)
}

/// `opts` with keyspace `name` given `ks` (in place of what it gave).
fn set_keyspace(opts: &mut Options, name: &str, ks: KeyspaceOptions) {
    let list = std::sync::Arc::make_mut(&mut opts.keyspaces);
    list.retain(|(n, _)| n != name);
    list.push((name.to_string(), ks));
}

pub(super) fn open(path: &Path, mut opts: Options, mode: Mode<'_>, clock: Arc<dyn Clock>) -> Result<TtlDb> {
    let recorded = read_recorded(path, &opts)?;
    let read_only = matches!(mode, Mode::ReadOnly);
    let (default_ttl, given): (Duration, &[(&str, Duration)]) = match mode {
        Mode::ReadWrite { ttl, keyspaces } => (ttl, keyspaces),
        Mode::ReadOnly => match recorded.as_ref().and_then(|r| r.default.as_ref()) {
            Some(o) => (
                o.ttl().ok_or_else(|| {
                    Error::invalid(
                        "the default keyspace stores plain values (no TTL recorded): open it with \
                         Db::open_read_only",
                    )
                })?,
                &[],
            ),
            None if recorded.is_none() => return Err(Error::NotADatabase(format!("{}", path.display()))),
            None => {
                return Err(Error::invalid(
                    "the default keyspace records no options (written before TTLs were recorded): \
                     open it read-write with TtlDb::open once to record its TTL",
                ))
            }
        },
    };
    if let (false, Some(Recorded { default: Some(d), .. })) = (read_only, &recorded) {
        if d.ttl().is_none() && has_data(path, &opts)? {
            return Err(Error::invalid(
                "the default keyspace stores plain values (written by Db) and holds data: TtlDb would \
                 misread them; open it with Db::open",
            ));
        }
    }
    for (name, _) in given {
        let found = recorded.as_ref().and_then(|r| r.keyspaces.iter().find(|(_, n, _)| n == name));
        match found {
            None => return Err(Error::KeyspaceNotFound(format!("{name:?} is not in this database"))),
            Some((_, _, o)) if o.ttl().is_none() => {
                return Err(Error::invalid(format!(
                    "keyspace {name:?} stores plain values (it was created without a TTL): it cannot be \
                     given one"
                )))
            }
            Some(_) => {}
        }
    }

    let default = Arc::new(Expiry::new(default_ttl, clock.clone()));
    let user = opts.compaction_filter.take();
    opts.compaction_filter = Some(Arc::new(TtlFilter::new(default.clone(), user)));
    opts.ttl = Some(default_ttl);
    let mut by_name = Vec::new();
    for (_, name, rec) in recorded.iter().flat_map(|r| &r.keyspaces) {
        let Some(rec_ttl) = rec.ttl() else { continue };
        let ttl = given.iter().find(|(n, _)| n == name).map_or(rec_ttl, |(_, t)| *t);
        let expiry = Arc::new(Expiry::new(ttl, clock.clone()));
        // The options the caller gave for it, else the recorded ones.
        let base =
            opts.keyspaces.iter().find(|(n, _)| n == name).map_or_else(|| rec.clone(), |(_, o)| o.clone());
        let filter = Arc::new(TtlFilter::new(expiry.clone(), base.compaction_filter()));
        set_keyspace(&mut opts, name, base.with_ttl(ttl, filter));
        by_name.push((name.clone(), expiry));
    }

    let db = if read_only { Db::open_read_only(path, opts)? } else { Db::open(path, opts)? };
    let mut trees = HashMap::new();
    trees.insert(0, default.clone());
    for (name, expiry) in by_name {
        trees.insert(db.keyspace(&name)?.id(), expiry);
    }
    let default = TtlKeyspace::new(db.default_keyspace(), default);
    Ok(TtlDb { db, default, clock, trees: RwLock::new(trees) })
}

/// Whether the default tree of the database at `path` (recorded as plain)
/// holds any value: read through a read-only open, which writes nothing.
fn has_data(path: &Path, opts: &Options) -> Result<bool> {
    let db = Db::open_read_only(path, opts.clone())?;
    let any = db.iter().next().transpose()?.is_some();
    db.close()?;
    Ok(any)
}
