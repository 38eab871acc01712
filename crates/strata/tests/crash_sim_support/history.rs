//! The expected state of a crashed database: the ordered list of writes the
//! workload issued, how many of them were made durable, and a checker that a
//! recovered key/value map is the state after some prefix of that list.

use std::collections::BTreeMap;

/// One write: a batch of (key, Some(value) = put | None = delete).
pub type Write = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// A key/value map as read back from a database.
pub type Kv = BTreeMap<Vec<u8>, Vec<u8>>;

/// Writes in issue order. Writes are serialized by one client thread, so the
/// engine's WAL order is this order.
#[derive(Debug, Default, Clone)]
pub struct History {
    /// Every write issued; the last one may have failed or been in flight at the crash.
    writes: Vec<Write>,
    /// Writes acknowledged (a prefix of `writes`).
    acked: usize,
    /// Writes that must survive any crash: up to the last acknowledged synced
    /// write (a WAL sync covers every earlier record), or the last successful
    /// flush / compact_range / close.
    durable: usize,
}

/// Value of write `w` for `key`: unique, so a recovered value names its write.
pub fn value_of(w: usize, key: &[u8], len: usize) -> Vec<u8> {
    let mut v = format!("w{w}:{}:", String::from_utf8_lossy(key)).into_bytes();
    let mut x = (w as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(b'a' + (x % 26) as u8);
    }
    v
}

/// The write index a value names, if it is one of ours.
fn writer_of(v: &[u8]) -> Option<usize> {
    let s = v.strip_prefix(b"w")?;
    let end = s.iter().position(|&b| b == b':')?;
    std::str::from_utf8(&s[..end]).ok()?.parse().ok()
}

fn show(k: &[u8]) -> String {
    String::from_utf8_lossy(k).into_owned()
}

fn show_val(v: Option<&Vec<u8>>) -> String {
    match v {
        None => "absent".into(),
        Some(v) => format!("{:?}", String::from_utf8_lossy(&v[..v.len().min(24)])),
    }
}

impl History {
    /// Number of writes issued so far; the next write gets this index.
    pub fn next_index(&self) -> usize {
        self.writes.len()
    }

    /// Writes acknowledged so far.
    pub fn acked(&self) -> usize {
        self.acked
    }

    /// Writes that must survive a power loss.
    pub fn durable(&self) -> usize {
        self.durable
    }

    /// Records a write about to be issued; returns its index.
    pub fn begin(&mut self, w: Write) -> usize {
        assert_eq!(self.acked, self.writes.len(), "one write in flight at a time");
        self.writes.push(w);
        self.writes.len() - 1
    }

    /// The write in flight was acknowledged.
    pub fn ack(&mut self, synced: bool) {
        self.acked = self.writes.len();
        if synced {
            self.durable = self.acked;
        }
    }

    /// A flush, compact_range or close succeeded: every acknowledged write is on disk.
    pub fn all_durable(&mut self) {
        self.durable = self.acked;
    }

    /// Every acknowledged write up to the last one with a key `touches`
    /// accepts must survive (a flush of one keyspace: its memtable switch
    /// syncs the WAL, which holds every earlier write of every keyspace).
    pub fn durable_through(&mut self, touches: impl Fn(&[u8]) -> bool) {
        let last = self.writes[..self.acked].iter().rposition(|w| w.iter().any(|(k, _)| touches(k)));
        if let Some(i) = last {
            self.durable = self.durable.max(i + 1);
        }
    }

    /// The same history with each key renamed by `f`, or left out where it
    /// gives `None` (the writes keep their indices, so prefixes line up).
    pub fn map_keys(&self, f: impl Fn(&[u8]) -> Option<Vec<u8>>) -> History {
        let writes = self
            .writes
            .iter()
            .map(|w| w.iter().filter_map(|(k, v)| f(k).map(|k| (k, v.clone()))).collect())
            .collect();
        History { writes, acked: self.acked, durable: self.durable }
    }

    /// State after the first `n` writes.
    pub fn state_after(&self, n: usize) -> Kv {
        let mut s = Kv::new();
        for w in &self.writes[..n] {
            apply(&mut s, w);
        }
        s
    }

    /// Checks that `got` is the state after the first `c` writes for some `c`
    /// between `min_prefix` and the number issued; returns `c`. This implies:
    /// every durable write is there (or overwritten by a later write), no value
    /// was invented, and what survived of the rest is a prefix of the write order.
    pub fn check(&self, got: &Kv, min_prefix: usize) -> Result<usize, String> {
        self.check_within(got, min_prefix, self.writes.len())
    }

    /// [`check`](Self::check), with the prefix also at most `max_prefix` (the
    /// writes after it failed and must not be visible).
    pub fn check_within(&self, got: &Kv, min_prefix: usize, max_prefix: usize) -> Result<usize, String> {
        let mut state = Kv::new();
        // Keys where `state` and `got` differ.
        let mut mismatched = got.len();
        let mut matches = Vec::new();
        if mismatched == 0 {
            matches.push(0);
        }
        for (i, w) in self.writes.iter().enumerate() {
            for (k, v) in w {
                let before = state.get(k) != got.get(k);
                match v {
                    Some(v) => state.insert(k.clone(), v.clone()),
                    None => state.remove(k),
                };
                let after = state.get(k) != got.get(k);
                mismatched = mismatched + usize::from(after) - usize::from(before);
            }
            if mismatched == 0 {
                matches.push(i + 1);
            }
        }
        if let Some(&c) = matches.iter().find(|&&c| c >= min_prefix && c <= max_prefix) {
            return Ok(c);
        }
        if let Some(&c) = matches.iter().find(|&&c| c > max_prefix) {
            return Err(format!(
                "the state after write {c} came back, but writes from {} on failed and must not be visible",
                max_prefix + 1
            ));
        }
        Err(self.diagnose(got, min_prefix, &matches))
    }

    fn diagnose(&self, got: &Kv, min_prefix: usize, matches: &[usize]) -> String {
        let head = format!(
            "{} writes issued, {} acknowledged, {min_prefix} must survive; {} keys recovered",
            self.writes.len(),
            self.acked,
            got.len()
        );
        for (k, v) in got {
            let known = writer_of(v)
                .and_then(|w| self.writes.get(w))
                .is_some_and(|w| w.iter().any(|(wk, wv)| wk == k && wv.as_ref() == Some(v)));
            if !known {
                return format!("{head}: key {} has a value never written: {}", show(k), show_val(Some(v)));
            }
        }
        let expected = self.state_after(min_prefix);
        let diffs: Vec<String> = expected
            .keys()
            .chain(got.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter(|k| expected.get(*k) != got.get(*k))
            .take(4)
            .map(|k| {
                format!("{}: durable {} got {}", show(k), show_val(expected.get(k)), show_val(got.get(k)))
            })
            .collect();
        match matches.last() {
            Some(c) => format!(
                "{head}: LOST DURABLE WRITES: recovered state is the prefix of {c} writes (< {min_prefix}); {}",
                diffs.join("; ")
            ),
            None => format!("{head}: NOT A PREFIX of the write order; {}", diffs.join("; ")),
        }
    }
}

fn apply(s: &mut Kv, w: &Write) {
    for (k, v) in w {
        match v {
            Some(v) => s.insert(k.clone(), v.clone()),
            None => s.remove(k),
        };
    }
}
