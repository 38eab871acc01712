//! kill -9 of a node's storage in the middle of appends, votes,
//! truncations, applies, snapshots, snapshot installs and purges. A child
//! process runs a seeded sequence of the calls openraft makes, printing
//! `ack N` after call N returns, and is SIGKILLed at a random moment; the
//! reopened storage must be exactly the state after the acknowledged calls
//! or after the one in flight too (each call is atomic, every call but
//! `apply` durable once acknowledged), and the state machine a state some
//! prefix of the applies produced, no older than the last durable call saw.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Cursor};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine, SnapshotMeta};
use openraft::testing::log_id;
use openraft::{
    BasicNode, Entry, EntryPayload, LogId, RaftLogReader, RaftSnapshotBuilder, StoredMembership, Vote,
};
use strata_raft::{LogStore, NodeId, Request, StateMachine, TypeConfig};

const ENV_DIR: &str = "STRATA_RAFT_CRASH_DIR";
const ENV_SEED: &str = "STRATA_RAFT_CRASH_SEED";
const NODE: NodeId = 1;
const KEYS: u64 = 37;

/// A small xorshift: the parent and the child draw the same calls.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// One storage call, as openraft would make it.
#[derive(Clone, Debug)]
enum Call {
    Append(Vec<(u64, u64)>),
    Vote(u64),
    Truncate(u64),
    Apply(Vec<(u64, u64)>),
    Snapshot,
    Purge(u64, u64),
    Install(u64, u64),
}

/// What a node's storage holds.
#[derive(Clone, Debug, Default, PartialEq)]
struct Durable {
    /// index -> term
    log: BTreeMap<u64, u64>,
    vote: u64,
    last_purged: Option<(u64, u64)>,
}

#[derive(Clone, Debug, Default)]
struct Model {
    durable: Durable,
    term: u64,
    /// The applied (term, index) and the data it produced.
    applied: Option<(u64, u64)>,
    data: BTreeMap<Vec<u8>, Vec<u8>>,
    /// After a snapshot install, openraft's next call purges the log up to it.
    purge_next: Option<(u64, u64)>,
    /// The last snapshot's index: openraft purges no further.
    snapshot: u64,
}

fn key(index: u64) -> Vec<u8> {
    format!("k{}", index % KEYS).into_bytes()
}

fn value(term: u64, index: u64) -> Vec<u8> {
    format!("{term}-{index}").into_bytes()
}

fn entry(term: u64, index: u64) -> Entry<TypeConfig> {
    let req = Request::Set { key: key(index), value: value(term, index) };
    Entry { log_id: log_id(term, NODE, index), payload: EntryPayload::Normal(req) }
}

impl Model {
    fn last_index(&self) -> u64 {
        let purged = self.durable.last_purged.map_or(0, |p| p.1);
        self.durable.log.keys().next_back().copied().unwrap_or(purged)
    }

    fn applied_index(&self) -> u64 {
        self.applied.map_or(0, |a| a.1)
    }

    /// The next call (drawn from `rng`), applied to the model.
    fn next_call(&mut self, rng: &mut Rng) -> Call {
        let last = self.last_index();
        let applied = self.applied_index();
        if let Some((t, i)) = self.purge_next.take() {
            let call = Call::Purge(t, i);
            self.apply(&call);
            return call;
        }
        let call = match rng.below(10) {
            0 => {
                self.term += 1;
                Call::Vote(self.term)
            }
            1 if last > applied => Call::Truncate(applied + 1 + rng.below(last - applied)),
            2 | 3 if last > applied => {
                let upto = applied + 1 + rng.below((last - applied).min(8));
                Call::Apply((applied + 1..=upto).map(|i| (self.durable.log[&i], i)).collect())
            }
            4 if applied > 0 => Call::Snapshot,
            5 if self.snapshot > self.durable.last_purged.map_or(0, |p| p.1) => {
                let i = self.snapshot - rng.below(3).min(self.snapshot - 1);
                match self.durable.log.get(&i) {
                    Some(&t) => Call::Purge(t, i),
                    None => Call::Snapshot,
                }
            }
            6 if rng.below(4) == 0 => Call::Install(self.term.max(1), last + 1 + rng.below(10)),
            _ => {
                let n = 1 + rng.below(12);
                let term = self.term.max(1);
                Call::Append((last + 1..=last + n).map(|i| (term, i)).collect())
            }
        };
        self.apply(&call);
        call
    }

    fn apply(&mut self, call: &Call) {
        match call {
            Call::Append(es) => {
                for &(t, i) in es {
                    self.durable.log.insert(i, t);
                }
            }
            Call::Vote(t) => self.durable.vote = *t,
            Call::Truncate(i) => {
                self.durable.log.split_off(i);
                // A truncation comes with a new leader.
                self.term += 1;
            }
            Call::Apply(es) => {
                for &(t, i) in es {
                    self.data.insert(key(i), value(t, i));
                    self.applied = Some((t, i));
                }
            }
            Call::Snapshot => self.snapshot = self.applied_index(),
            Call::Purge(t, i) => {
                self.durable.log = self.durable.log.split_off(&(i + 1));
                self.durable.last_purged = Some((*t, *i));
            }
            Call::Install(t, i) => {
                // The leader's state at (t, i): ours, then its entries past our log.
                let from = self.applied_index() + 1;
                for j in from..=*i {
                    let term = if j <= self.last_index() {
                        self.durable.log.get(&j).copied().unwrap_or(*t)
                    } else {
                        *t
                    };
                    self.data.insert(key(j), value(term, j));
                }
                self.applied = Some((*t, *i));
                self.snapshot = *i;
                self.purge_next = Some((*t, *i));
            }
        }
    }
}

fn encode(data: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in data {
        for part in [k, v] {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
    }
    out
}

fn small_options() -> strata::Options {
    strata::Options::default().with_write_buffer_size(16 << 10).with_target_file_size_base(8 << 10)
}

/// Makes `call`; `model` is the state before it, `after` the state after.
async fn run(log: &mut LogStore, sm: &mut StateMachine, model: &Model, after: &Model, call: &Call) {
    let lid = |(t, i): (u64, u64)| log_id(t, NODE, i);
    match call {
        Call::Append(es) => log.blocking_append(es.iter().map(|&(t, i)| entry(t, i))).await.unwrap(),
        Call::Vote(t) => log.save_vote(&Vote::new(*t, NODE)).await.unwrap(),
        Call::Truncate(i) => log.truncate(lid((model.durable.log[i], *i))).await.unwrap(),
        Call::Apply(es) => {
            let entries = log.try_get_log_entries(es[0].1..=es[es.len() - 1].1).await.unwrap();
            assert_eq!(entries.len(), es.len());
            sm.apply(entries).await.unwrap();
        }
        Call::Snapshot => {
            let mut b = sm.get_snapshot_builder().await;
            b.build_snapshot().await.unwrap();
        }
        Call::Purge(t, i) => log.purge(lid((*t, *i))).await.unwrap(),
        Call::Install(t, i) => {
            let meta = SnapshotMeta {
                last_log_id: Some(lid((*t, *i))),
                last_membership: StoredMembership::<NodeId, BasicNode>::default(),
                snapshot_id: format!("installed-{t}-{i}"),
            };
            sm.install_snapshot(&meta, Box::new(Cursor::new(encode(&after.data)))).await.unwrap();
        }
    }
}

/// The child: runs the calls of its seed until killed.
#[test]
#[ignore = "run by raft_storage_survives_kill9 as a child process"]
fn raft_crash_child() {
    let Ok(dir) = std::env::var(ENV_DIR) else { return };
    let seed: u64 = std::env::var(ENV_SEED).unwrap().parse().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (mut log, mut sm) = strata_raft::open_with(&dir, small_options()).unwrap();
        let mut rng = Rng(seed);
        let mut model = Model::default();
        for n in 1.. {
            let before = model.clone();
            let call = model.next_call(&mut rng);
            run(&mut log, &mut sm, &before, &model, &call).await;
            // The storage agrees with the model as it goes, not only after a crash.
            let state = log.get_log_state().await.unwrap();
            let last = state.last_log_id.map(|l| (l.leader_id.term, l.index));
            let want =
                model.durable.log.iter().next_back().map(|(&i, &t)| (t, i)).or(model.durable.last_purged);
            assert_eq!(last, want, "call {n} ({call:?}): the last log id");
            println!("ack {n}");
        }
    });
}

/// The models after `acked` calls and after one more, and the applied
/// index every acknowledged durable call had seen (the floor a crash keeps).
fn models(seed: u64, acked: u64) -> (Model, Model, u64) {
    let mut rng = Rng(seed);
    let mut model = Model::default();
    let mut floor = 0;
    for _ in 0..acked {
        let call = model.next_call(&mut rng);
        if !matches!(call, Call::Apply(_)) {
            floor = model.applied_index();
        }
    }
    let after = model.clone();
    let mut next = model.clone();
    next.next_call(&mut rng);
    (after, next, floor)
}

async fn read_back(dir: &Path) -> (Durable, Option<(u64, u64)>, BTreeMap<Vec<u8>, Vec<u8>>) {
    let (mut log, mut sm) = strata_raft::open(dir).unwrap();
    let state = log.get_log_state().await.unwrap();
    let entries = log.try_get_log_entries(..).await.unwrap();
    let durable = Durable {
        log: entries.iter().map(|e| (e.log_id.index, e.log_id.leader_id.term)).collect(),
        vote: log.read_vote().await.unwrap().map_or(0, |v| v.leader_id.term),
        last_purged: state.last_purged_log_id.map(|l: LogId<NodeId>| (l.leader_id.term, l.index)),
    };
    let (applied, _) = sm.applied_state().await.unwrap();
    let data = sm.items().unwrap().into_iter().collect();
    // The current snapshot, if any, reads back whole.
    if let Some(s) = sm.get_current_snapshot().await.unwrap() {
        assert!(s.meta.last_log_id.is_some(), "a snapshot of an empty state machine was built");
    }
    (durable, applied.map(|a| (a.leader_id.term, a.index)), data)
}

/// The data the applies of `seed` produced when the applied index was `applied`.
fn data_at(seed: u64, upto_calls: u64, applied: Option<(u64, u64)>) -> Option<BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut rng = Rng(seed);
    let mut model = Model::default();
    if model.applied == applied {
        return Some(model.data);
    }
    for _ in 0..upto_calls {
        model.next_call(&mut rng);
        if model.applied == applied {
            return Some(model.data);
        }
    }
    None
}

#[test]
fn raft_storage_survives_kill9() {
    let exe = std::env::current_exe().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut pick = Rng(0x5eed_ca77);
    for round in 0..8u64 {
        let seed = 0x9e37_79b9_7f4a_7c15 ^ (round + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("node");
        let mut child = Command::new(&exe)
            .args(["raft_crash_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(ENV_DIR, &dir)
            .env(ENV_SEED, seed.to_string())
            .stdout(Stdio::piped())
            // A failing check in the child shows its message here.
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let want = 20 + pick.below(400);
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut acked = 0;
        while acked < want {
            assert!(Instant::now() < deadline, "round {round}: the child acknowledged only {acked} calls");
            match lines.next() {
                Some(Ok(line)) => acked = line.strip_prefix("ack ").map_or(acked, |n| n.parse().unwrap()),
                _ => panic!("round {round}: the child stopped after {acked} calls"),
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // Lines printed before the kill are still in the pipe.
        for line in lines.map_while(Result::ok) {
            acked = line.strip_prefix("ack ").map_or(acked, |n| n.parse().unwrap());
        }
        let (after, next, floor) = models(seed, acked);
        let (durable, applied, data) = rt.block_on(read_back(&dir));
        assert!(
            durable == after.durable || durable == next.durable,
            "round {round} (seed {seed}, {acked} calls acknowledged): the log and its metadata are neither \
             the acknowledged state nor that plus the call in flight\n got {durable:?}\nwant {:?}\n  or {:?}",
            after.durable,
            next.durable
        );
        let applied_index = applied.map_or(0, |a| a.1);
        assert!(
            applied_index >= floor && applied_index <= next.applied_index().max(after.applied_index()),
            "round {round}: applied index {applied_index} outside [{floor}, {}]",
            next.applied_index()
        );
        let want = data_at(seed, acked + 1, applied)
            .unwrap_or_else(|| panic!("round {round}: applied {applied:?} is no state the applies produced"));
        assert_eq!(data, want, "round {round}: the state machine's data is not that of applied {applied:?}");
        eprintln!("round {round}: killed after {acked} calls; applied {applied_index} (floor {floor})");
    }
}
