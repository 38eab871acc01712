//! Keyspaces in crash cases: the workload's handles, the history keys of
//! their writes, the log of creates and drops, and the check of a recovered
//! database against every outcome that log allows.
//!
//! History keys name the keyspace *incarnation* (`hot@2/k03`: the second
//! keyspace created under the name `hot`), so a write to a dropped keyspace
//! can never be mistaken for one to the keyspace later re-created under its
//! name. The default keyspace's keys stay bare (`k03`), as in cases without
//! keyspaces. A recovered database reads back as `hot/k03` for each key and
//! a marker `hot/` for each keyspace it has.

use std::collections::BTreeSet;
use std::sync::Arc;

use strata::{Db, Keyspace, KeyspaceOptions, Options, WriteBatch, WriteOptions};

use super::driver::{key, merged, options, Step};
use super::history::{value_of, History, Kv, Write};

/// One op of a step on a keyspace (`k` is the key, or a range's start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KsOp {
    /// A put of a value of this length.
    Put(usize),
    Delete,
    /// A merge operand of this length.
    Merge(usize),
    /// A range delete of keys `k..hi`.
    DeleteRange(usize),
}

/// The options keyspace policy `policy` is created and reopened with: the
/// crash cases' tiny sizes and merge operator.
pub fn ks_options(policy: &str) -> KeyspaceOptions {
    // The VFS of these options is never used: a keyspace runs on the database's.
    KeyspaceOptions::from_options(&options(policy, Arc::new(strata::MemVfs::new())))
}

/// The recovered-state key of key `k` of keyspace `name`.
pub fn ks_key(name: &str, k: &[u8]) -> Vec<u8> {
    [name.as_bytes(), b"/", k].concat()
}

/// The recovered-state marker of a keyspace that exists.
pub fn marker(name: &str) -> Vec<u8> {
    format!("{name}/").into_bytes()
}

/// Creates and drops in issue order: (keyspace index, whether a create).
/// Both are durable when they return `Ok` (one synced root-MANIFEST edit);
/// the one in flight at the crash may or may not have happened.
#[derive(Debug, Default, Clone)]
pub struct Ddl {
    ops: Vec<(usize, bool)>,
    acked: usize,
}

impl Ddl {
    /// Records a create (or drop) of keyspace `ks` about to be issued.
    pub fn begin(&mut self, ks: usize, create: bool) {
        assert_eq!(self.acked, self.ops.len(), "one keyspace op in flight at a time");
        self.ops.push((ks, create));
    }

    /// The op in flight was acknowledged.
    pub fn ack(&mut self) {
        self.acked = self.ops.len();
    }

    /// Whether the last op issued was not acknowledged.
    pub fn in_flight(&self) -> bool {
        self.acked < self.ops.len()
    }

    /// Keyspace ops acknowledged.
    pub fn acked(&self) -> usize {
        self.acked
    }

    /// The live incarnation of each keyspace after the first `n` ops.
    fn alive(&self, n: usize, spaces: usize) -> Vec<Option<usize>> {
        let mut created = vec![0; spaces];
        let mut alive = vec![None; spaces];
        for &(ks, create) in &self.ops[..n] {
            if create {
                created[ks] += 1;
                alive[ks] = Some(created[ks]);
            } else {
                alive[ks] = None;
            }
        }
        alive
    }
}

/// The workload's view of its keyspaces: index 0 is the default keyspace,
/// `i > 0` is `names[i - 1]` (name, policy).
pub struct Spaces<'a> {
    names: &'a [(String, String)],
    handles: Vec<Option<Keyspace>>,
    /// Creates issued per keyspace: the current incarnation.
    created: Vec<usize>,
    pub ddl: Ddl,
    /// Flushes and compactions the keyspaces (not the default one) ran.
    pub flushes: u64,
    pub compactions: u64,
}

impl<'a> Spaces<'a> {
    pub fn new(names: &'a [(String, String)], db: &Db) -> Self {
        let mut handles = vec![None; names.len() + 1];
        handles[0] = Some(db.default_keyspace());
        Spaces {
            names,
            handles,
            created: vec![0; names.len() + 1],
            ddl: Ddl::default(),
            flushes: 0,
            compactions: 0,
        }
    }

    /// Adds the live keyspaces' flush and compaction counts (before a close:
    /// the counters start again at each open).
    pub fn tally(&mut self) {
        for hd in self.handles.iter().skip(1).flatten() {
            let st = hd.stats();
            self.flushes += st.flushes;
            self.compactions += st.compactions;
        }
    }

    fn name(&self, ks: usize) -> &str {
        &self.names[ks - 1].0
    }

    /// The history key of key `k` of keyspace `ks`'s current incarnation.
    fn hkey(&self, ks: usize, k: usize) -> Vec<u8> {
        if ks == 0 {
            key(k)
        } else {
            let inc = format!("{}@{}/", self.name(ks), self.created[ks]).into_bytes();
            [inc, key(k)].concat()
        }
    }

    /// Whether a history key is one of keyspace `ks`'s current incarnation.
    fn touches(&self, ks: usize) -> impl Fn(&[u8]) -> bool {
        let prefix = (ks > 0).then(|| format!("{}@{}/", self.name(ks), self.created[ks]).into_bytes());
        move |k: &[u8]| match &prefix {
            Some(p) => k.starts_with(p),
            None => !k.contains(&b'@'),
        }
    }

    fn handle(&self, ks: usize) -> &Keyspace {
        self.handles[ks].as_ref().expect("the workload uses only live keyspaces")
    }

    /// `opts` with the options of every live keyspace (a reopen must give
    /// their merge operator again; naming one that does not exist would create it).
    pub fn reopen_options(&self, opts: &Options) -> Options {
        let mut o = opts.clone();
        for ks in 1..self.handles.len() {
            if self.handles[ks].is_some() {
                o = o.with_keyspace(self.name(ks), ks_options(&self.names[ks - 1].1));
            }
        }
        o
    }

    /// Fresh handles after a reopen.
    pub fn reattach(&mut self, db: &Db) -> strata::Result<()> {
        self.handles[0] = Some(db.default_keyspace());
        for ks in 1..self.handles.len() {
            if self.handles[ks].is_some() {
                self.handles[ks] = Some(db.keyspace(self.name(ks))?);
            }
        }
        Ok(())
    }

    /// The write `ops` make, as the history records it (a merge as the value
    /// it makes, a range delete as a delete of each key in it), and the bytes
    /// each op sends (a value, a merge operand; empty for deletes).
    fn plan(&self, ops: &[(usize, usize, KsOp)], h: &History) -> (Write, Vec<Vec<u8>>) {
        let w = h.next_index();
        let mut state =
            if ops.iter().any(|o| matches!(o.2, KsOp::Merge(_))) { h.state_after(w) } else { Kv::new() };
        let (mut write, mut bytes) = (Write::new(), Vec::new());
        for &(ks, k, op) in ops {
            let hk = self.hkey(ks, k);
            match op {
                KsOp::Put(len) => {
                    let v = value_of(w, &hk, len);
                    state.insert(hk.clone(), v.clone());
                    write.push((hk, Some(v.clone())));
                    bytes.push(v);
                }
                KsOp::Delete => {
                    state.remove(&hk);
                    write.push((hk, None));
                    bytes.push(Vec::new());
                }
                KsOp::Merge(len) => {
                    let operand = value_of(w, &hk, len);
                    let after = merged(state.get(&hk).map(Vec::as_slice), &operand);
                    state.insert(hk.clone(), after.clone());
                    write.push((hk, Some(after)));
                    bytes.push(operand);
                }
                KsOp::DeleteRange(hi) => {
                    for kk in k..hi {
                        let hk = self.hkey(ks, kk);
                        state.remove(&hk);
                        write.push((hk, None));
                    }
                    bytes.push(Vec::new());
                }
            }
        }
        (write, bytes)
    }

    /// Runs `step` if it is a keyspace step (else `None`), recording it in
    /// `h` and the keyspace log.
    pub fn run(&mut self, step: &Step, db: &Db, h: &mut History) -> Option<strata::Result<()>> {
        Some(match step {
            Step::In { ks, step } => self.run_in(*ks, step, db, h),
            Step::CfBatch { ops, sync } => {
                let (write, bytes) = self.plan(ops, h);
                let mut b = WriteBatch::new();
                for (&(ks, k, op), v) in ops.iter().zip(&bytes) {
                    let hd = self.handle(ks);
                    // The default keyspace by the plain forms, the others by `_cf`.
                    match (ks, op) {
                        (0, KsOp::Put(_)) => b.put(key(k), v),
                        (0, KsOp::Delete) => b.delete(key(k)),
                        (0, KsOp::Merge(_)) => b.merge(key(k), v),
                        (0, KsOp::DeleteRange(hi)) => b.delete_range(key(k), key(hi)),
                        (_, KsOp::Put(_)) => b.put_cf(hd, key(k), v),
                        (_, KsOp::Delete) => b.delete_cf(hd, key(k)),
                        (_, KsOp::Merge(_)) => b.merge_cf(hd, key(k), v),
                        (_, KsOp::DeleteRange(hi)) => b.delete_range_cf(hd, key(k), key(hi)),
                    }
                }
                h.begin(write);
                let r = db.write_opt(b, &WriteOptions::default().with_sync(*sync));
                if r.is_ok() {
                    h.ack(*sync);
                }
                r
            }
            Step::CreateKeyspace { ks } => {
                self.created[*ks] += 1;
                self.ddl.begin(*ks, true);
                let r = db.create_keyspace(self.name(*ks), ks_options(&self.names[ks - 1].1));
                r.map(|hd| {
                    self.handles[*ks] = Some(hd);
                    self.ddl.ack();
                })
            }
            Step::DropKeyspace { ks } => {
                self.ddl.begin(*ks, false);
                db.drop_keyspace(self.name(*ks)).map(|()| {
                    self.handles[*ks] = None;
                    self.ddl.ack();
                })
            }
            _ => return None,
        })
    }

    /// A write, flush or compaction of one keyspace, through its handle
    /// (synced writes) or the `Db::*_cf` forms (every other plain write).
    fn run_in(&mut self, ks: usize, step: &Step, db: &Db, h: &mut History) -> strata::Result<()> {
        let (op, k, sync) = match *step {
            Step::Put { k, len, sync } => (KsOp::Put(len), k, sync),
            Step::Delete { k, sync } => (KsOp::Delete, k, sync),
            Step::Merge { k, len, sync } => (KsOp::Merge(len), k, sync),
            Step::DeleteRange { lo, hi, sync } => (KsOp::DeleteRange(hi), lo, sync),
            Step::Flush | Step::Compact => {
                let hd = self.handle(ks);
                let r = match (step, ks % 2) {
                    (Step::Flush, 0) => hd.flush(),
                    (Step::Flush, _) => db.flush_cf(hd),
                    (_, 0) => hd.compact_range(None, None),
                    _ => db.compact_range_cf(hd, None, None),
                };
                if r.is_ok() {
                    h.durable_through(self.touches(ks));
                }
                return r;
            }
            ref other => panic!("not a keyspace step: {other:?}"),
        };
        let (write, bytes) = self.plan(&[(ks, k, op)], h);
        let v = &bytes[0];
        let hd = self.handle(ks);
        let wo = WriteOptions::default().with_sync(sync);
        h.begin(write);
        let r = match (op, !sync && k % 2 == 1) {
            (KsOp::Put(_), false) => hd.put_opt(key(k), v, &wo),
            (KsOp::Put(_), true) => db.put_cf(hd, key(k), v),
            (KsOp::Delete, false) => hd.delete_opt(key(k), &wo),
            (KsOp::Delete, true) => db.delete_cf(hd, key(k)),
            (KsOp::Merge(_), false) => hd.merge_opt(key(k), v, &wo),
            (KsOp::Merge(_), true) => db.merge_cf(hd, key(k), v),
            (KsOp::DeleteRange(hi), false) => hd.delete_range_opt(key(k), key(hi), &wo),
            (KsOp::DeleteRange(hi), true) => db.delete_range_cf(hd, key(k), key(hi)),
        };
        if r.is_ok() {
            h.ack(sync);
        }
        r
    }
}

/// A recovered history key: `hot@2/k03` becomes `hot/k03` if incarnation 2
/// of `hot` is the one alive, and is left out otherwise.
fn recovered_key(k: &[u8], names: &[(String, String)], alive: &[Option<usize>]) -> Option<Vec<u8>> {
    let Some(at) = k.iter().position(|&b| b == b'@') else { return Some(k.to_vec()) };
    let slash = at + k[at..].iter().position(|&b| b == b'/')?;
    let name = std::str::from_utf8(&k[..at]).ok()?;
    let inc: usize = std::str::from_utf8(&k[at + 1..slash]).ok()?.parse().ok()?;
    let ks = 1 + names.iter().position(|(n, _)| n == name)?;
    (alive[ks] == Some(inc)).then(|| ks_key(name, &k[slash + 1..]))
}

/// Checks a recovered database with keyspaces (`got`: default keys bare,
/// keyspace keys and markers under `name/`): for some outcome of the
/// keyspace log (every acknowledged create and drop, perhaps the one in
/// flight), the keyspaces it has are exactly those alive, and its data is
/// the state after some prefix of the write order in `min..=max`, counting
/// only writes to the incarnations alive (a batch across keyspaces is one
/// write, so it is all there or not at all).
pub fn check(
    h: &History,
    ddl: &Ddl,
    names: &[(String, String)],
    got: &Kv,
    min: usize,
    max: usize,
) -> Result<usize, String> {
    let markers: BTreeSet<Vec<u8>> = got.keys().filter(|k| k.ends_with(b"/")).cloned().collect();
    let data: Kv =
        got.iter().filter(|(k, _)| !k.ends_with(b"/")).map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut why = Vec::new();
    for n in ddl.acked..=ddl.ops.len() {
        let alive = ddl.alive(n, names.len() + 1);
        let want: BTreeSet<Vec<u8>> =
            (1..alive.len()).filter(|&ks| alive[ks].is_some()).map(|ks| marker(&names[ks - 1].0)).collect();
        let show = |s: &BTreeSet<Vec<u8>>| {
            s.iter().map(|m| String::from_utf8_lossy(m).into_owned()).collect::<Vec<_>>()
        };
        if want != markers {
            why.push(format!(
                "after {n} of {} keyspace ops ({} acknowledged) the keyspaces are {:?}, recovered {:?}",
                ddl.ops.len(),
                ddl.acked,
                show(&want),
                show(&markers)
            ));
            continue;
        }
        match h.map_keys(|k| recovered_key(k, names, &alive)).check_within(&data, min, max) {
            Ok(c) => return Ok(c),
            Err(e) => why.push(format!("after {n} keyspace ops: {e}")),
        }
    }
    Err(why.join(" | "))
}
