//! After a kill, before the reopen, the killed state is also read two other
//! ways, and each must read exactly what `Db::open` reads:
//! - `Db::open_read_only` on the database itself (it writes nothing, so it
//!   runs first and the reopen still sees the killed state);
//! - `strata::repair` on a copy, then `Db::open` of the copy: repair must
//!   never be worse than open.
//!
//! Contents are compared per keyspace, in full (merged values, as a scan
//! returns them), together with the list of registered keyspaces.

use std::collections::BTreeMap;
use std::path::Path;

use strata::{Db, Error, Options};

use crate::config::{self, CycleConfig};
use crate::verify::Model;

/// What one way of opening read: the keyspaces registered before the open
/// created any, and the contents of every non-empty keyspace.
#[derive(Debug, PartialEq, Eq)]
pub struct Seen {
    pub registered: Vec<String>,
    pub contents: BTreeMap<String, Model>,
}

/// Scans every keyspace of `db`; `registered` is what the MANIFEST listed
/// before the open (`default` alone for a database the open created).
pub fn scan(db: &Db, mut registered: Vec<String>) -> Result<Seen, String> {
    if registered.is_empty() {
        registered.push("default".into());
    }
    let mut contents = BTreeMap::new();
    for name in db.list_keyspaces() {
        let h = db.keyspace(&name).map_err(|e| format!("keyspace {name}: {e}"))?;
        let mut m = Model::new();
        for kv in h.iter() {
            let (k, v) = kv.map_err(|e| format!("scan of {name} failed: {e}"))?;
            m.insert(k, v);
        }
        if !m.is_empty() {
            contents.insert(name, m);
        }
    }
    Ok(Seen { registered, contents })
}

/// Opens `db_dir` read-only with the keyspaces' options and scans it.
pub fn read_only(db_dir: &Path, opts: &Options) -> Result<Seen, Error> {
    let (with, registered) = crate::keyspaces::options_for(db_dir, opts)?;
    let db = Db::open_read_only(db_dir, with)?;
    scan(&db, registered).map_err(Error::invalid)
}

/// How the repair of the copy went.
pub enum Repaired {
    /// Repaired and reopened: what the copy reads.
    Read(Seen),
    /// Repair or the copy's open failed.
    Failed(String),
}

/// The database and data-path directories of the soak, relative to the work dir.
fn db_dirs() -> impl Iterator<Item = String> {
    std::iter::once("db".to_string()).chain((0..config::MAX_DATA_PATHS).map(|i| format!("data-{i}")))
}

/// Replaces `to` with a copy of the database and its data paths
/// from `from`: every file, keyspace directories included.
pub fn copy_db(from: &Path, to: &Path) -> std::io::Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    std::fs::create_dir_all(to)?;
    for d in db_dirs() {
        if from.join(&d).exists() {
            copy_dir(&from.join(&d), &to.join(&d))?;
        }
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type()?.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// Repairs the copy in `copy` (a work dir as [`copy_db`] made it) with the
/// cycle's options, opens it with `Db::open` and scans it. With `damage`
/// (test hook) one key of the repaired copy is deleted before the scan.
pub fn repair_copy(copy: &Path, cfg: &CycleConfig, damage: bool) -> Result<Repaired, Error> {
    let db_dir = copy.join("db");
    let opts = cfg.options_at(copy);
    // Repair rebuilds only the registered keyspaces; it ignores the others' options.
    if let Err(e) = strata::repair(&db_dir, crate::keyspaces::with_every_keyspace(&opts)?) {
        return Ok(Repaired::Failed(format!("repair failed: {e}")));
    }
    let (_, registered) = match crate::keyspaces::options_for(&db_dir, &opts) {
        Ok(r) => r,
        Err(e) => return Ok(Repaired::Failed(format!("repaired copy lists no keyspaces: {e}"))),
    };
    let (db, ks) = match crate::keyspaces::open(&db_dir, opts) {
        Ok(r) => r,
        Err(e) => return Ok(Repaired::Failed(format!("open of the repaired copy failed: {e}"))),
    };
    if damage {
        // The first key of the first non-empty keyspace.
        if let Some((h, k)) =
            ks.iter().find_map(|h| h.iter().next().and_then(|kv| kv.ok()).map(|(k, _)| (h, k)))
        {
            h.delete(&k)?;
        }
    }
    let seen = scan(&db, registered);
    drop(ks);
    db.close()?;
    Ok(match seen {
        Ok(s) => Repaired::Read(s),
        Err(e) => Repaired::Failed(e),
    })
}

/// The first difference between what `name` read and what `Db::open` read.
pub fn diff(name: &str, got: &Seen, open: &Seen) -> Option<String> {
    if got.registered != open.registered {
        return Some(format!(
            "{name} lists keyspaces {:?}, open lists {:?}",
            got.registered, open.registered
        ));
    }
    let empty = Model::new();
    let names: std::collections::BTreeSet<&String> =
        got.contents.keys().chain(open.contents.keys()).collect();
    for ks in names {
        let (a, b) = (got.contents.get(ks).unwrap_or(&empty), open.contents.get(ks).unwrap_or(&empty));
        if a == b {
            continue;
        }
        let show =
            |v: Option<&Vec<u8>>| v.map(|v| String::from_utf8_lossy(&v[..v.len().min(40)]).into_owned());
        let keys: std::collections::BTreeSet<&Vec<u8>> = a.keys().chain(b.keys()).collect();
        let bad = keys.iter().filter(|k| a.get(**k) != b.get(**k)).count();
        let k = keys.into_iter().find(|k| a.get(*k) != b.get(*k)).expect("maps differ");
        return Some(format!(
            "{name} differs from open in keyspace {ks} ({bad} keys; {} vs {} present): key {}: {name} {:?}, open {:?}",
            a.len(),
            b.len(),
            String::from_utf8_lossy(k),
            show(a.get(k)),
            show(b.get(k))
        ));
    }
    None
}
