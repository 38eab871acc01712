//! The expected-state log. Each child writer thread appends to its own file:
//! an intent line before a database write and an ack line after it returned
//! Ok. Lines go straight to the file (no user-space buffer), so a SIGKILL
//! loses nothing the child wrote; acks of synced writes are also fdatasync'ed.
//! A write with an ack is definitely applied; a write with an intent only
//! (at most the last one of each thread) may or may not be; a torn last line
//! is ignored (a torn intent was never started, a torn ack leaves it pending).
//!
//! Line format (keys and values are printable ASCII without spaces):
//! `I <n> <sync 0|1> (P <key> <value> | D <key> | M <key> <operand>)...`, `A <n>`, and `F <n> <maybe 0|1>`
//! for a write that returned an error under `--io-faults` (`maybe`: a sync
//! failed, so the write may have reached the disk; otherwise it must not have).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What a write does to one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Sets the value.
    Put(Vec<u8>),
    /// Removes the key.
    Delete,
    /// Merges an operand into the value ([`soak_merge`]).
    Merge(Vec<u8>),
    /// Deletes every key from the op's key (inclusive) to this end
    /// (exclusive): `Db::delete_range`.
    DeleteRange(Vec<u8>),
}

/// One key and what a write does to it.
pub type KeyOp = (Vec<u8>, Change);

/// The soak's merge operator, which the child, the verifier and every reopen
/// use: operands appended after a `+`, the value kept to its last 256 bytes
/// (values stay printable, without spaces, as the log needs).
pub fn soak_merge(existing: Option<&[u8]>, operand: &[u8]) -> Vec<u8> {
    let mut v = existing.map(<[u8]>::to_vec).unwrap_or_default();
    v.push(b'+');
    v.extend_from_slice(operand);
    v.split_off(v.len().saturating_sub(256))
}

/// [`soak_merge`] as the engine's operator.
pub fn soak_merge_operator() -> std::sync::Arc<dyn strata::MergeOperator> {
    strata::associative_merge_operator("strata-stress.append", |_key, existing, operand| {
        Some(soak_merge(existing, operand))
    })
}

/// A write as the log recorded it.
#[derive(Debug, Clone)]
pub struct LoggedWrite {
    /// Per-thread write number.
    pub n: u64,
    /// Written with `sync`.
    pub sync: bool,
    /// The operations, in batch order.
    pub ops: Vec<KeyOp>,
    /// The ack line is present.
    pub acked: bool,
    /// The write returned an error: `Some(true)` if it may still have reached
    /// the disk (a sync failed), `Some(false)` if it must not have.
    pub failed: Option<bool>,
}

/// Path of thread `t`'s log for `cycle`.
pub fn log_path(state_dir: &Path, cycle: u64, thread: usize) -> PathBuf {
    state_dir.join(format!("expected-c{cycle}-t{thread}.log"))
}

/// The child's side: appends intents and acks.
pub struct ExpectedLog {
    file: File,
}

impl ExpectedLog {
    /// Creates (truncates) the log.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(ExpectedLog { file: File::create(path)? })
    }

    /// Records that write `n` is about to be made.
    pub fn intent(&mut self, n: u64, sync: bool, ops: &[KeyOp]) -> std::io::Result<()> {
        let mut line = format!("I {n} {}", u8::from(sync)).into_bytes();
        for (k, change) in ops {
            let (tag, v): (&[u8], Option<&Vec<u8>>) = match change {
                Change::Put(v) => (b" P ", Some(v)),
                Change::Delete => (b" D ", None),
                Change::Merge(v) => (b" M ", Some(v)),
                Change::DeleteRange(end) => (b" R ", Some(end)),
            };
            line.extend_from_slice(tag);
            line.extend_from_slice(k);
            if let Some(v) = v {
                line.push(b' ');
                line.extend_from_slice(v);
            }
        }
        line.push(b'\n');
        self.file.write_all(&line)
    }

    /// Records that write `n` returned an error; `maybe`: it may have reached the disk.
    pub fn failed(&mut self, n: u64, maybe: bool) -> std::io::Result<()> {
        self.file.write_all(format!("F {n} {}\n", u8::from(maybe)).as_bytes())?;
        self.file.sync_data()
    }

    /// Records that write `n` returned Ok; synced writes' acks are made durable.
    pub fn ack(&mut self, n: u64, sync: bool) -> std::io::Result<()> {
        self.file.write_all(format!("A {n}\n").as_bytes())?;
        if sync {
            self.file.sync_data()?;
        }
        Ok(())
    }
}

/// Parses one thread's log. Errors describe a malformed complete line.
pub fn read_log(path: &Path) -> Result<Vec<LoggedWrite>, String> {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        // The child may have been killed before creating it.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut writes: Vec<LoggedWrite> = Vec::new();
    let complete = data.len() - data.iter().rev().take_while(|&&b| b != b'\n').count();
    for (i, line) in data[..complete].split(|&b| b == b'\n').enumerate().filter(|(_, l)| !l.is_empty()) {
        let bad = |what: &str| format!("{} line {}: {what}", path.display(), i + 1);
        let mut f = line.split(|&b| b == b' ');
        let tag = f.next().unwrap_or_default();
        let n: u64 = f
            .next()
            .and_then(|s| std::str::from_utf8(s).ok()?.parse().ok())
            .ok_or_else(|| bad("write number"))?;
        match tag {
            b"I" => {
                if writes.last().is_some_and(|w| !w.acked && w.failed.is_none()) {
                    return Err(bad("a new intent before the previous write's ack"));
                }
                let sync = f.next() == Some(b"1");
                let mut ops = Vec::new();
                while let Some(kind) = f.next() {
                    let key = f.next().ok_or_else(|| bad("key"))?.to_vec();
                    match kind {
                        b"P" => ops.push((key, Change::Put(f.next().ok_or_else(|| bad("value"))?.to_vec()))),
                        b"D" => ops.push((key, Change::Delete)),
                        b"R" => {
                            ops.push((key, Change::DeleteRange(f.next().ok_or_else(|| bad("end"))?.to_vec())))
                        }
                        b"M" => {
                            ops.push((key, Change::Merge(f.next().ok_or_else(|| bad("operand"))?.to_vec())))
                        }
                        _ => return Err(bad("op kind")),
                    }
                }
                writes.push(LoggedWrite { n, sync, ops, acked: false, failed: None });
            }
            b"A" => match writes.last_mut() {
                Some(w) if w.n == n && !w.acked && w.failed.is_none() => w.acked = true,
                _ => return Err(bad("an ack without its intent")),
            },
            b"F" => match writes.last_mut() {
                Some(w) if w.n == n && !w.acked && w.failed.is_none() => {
                    w.failed = Some(f.next() == Some(b"1"))
                }
                _ => return Err(bad("a failure without its intent")),
            },
            _ => return Err(bad("line tag")),
        }
    }
    Ok(writes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_torn_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("log");
        let mut log = ExpectedLog::create(&p).expect("create");
        let ops = vec![
            (b"k1".to_vec(), Change::Put(b"v1".to_vec())),
            (b"k2".to_vec(), Change::Delete),
            (b"k1".to_vec(), Change::Merge(b"m1".to_vec())),
            (b"k0".to_vec(), Change::DeleteRange(b"k3".to_vec())),
        ];
        log.intent(0, true, &ops).expect("intent");
        log.ack(0, true).expect("ack");
        log.intent(1, false, &ops[1..]).expect("intent");
        drop(log);
        let got = read_log(&p).expect("parse");
        assert_eq!(got.len(), 2);
        assert!(got[0].acked && got[0].sync && !got[1].acked);
        assert_eq!(got[0].ops, ops);
        // A torn ack is ignored: write 1 stays pending.
        std::fs::OpenOptions::new().append(true).open(&p).expect("open").write_all(b"A 1").expect("append");
        assert!(!read_log(&p).expect("parse")[1].acked);
        // An ack for a write never intended is an error.
        std::fs::write(&p, b"A 5\n").expect("write");
        assert!(read_log(&p).is_err());
        // A failed write ends as failed, with its maybe flag; a later intent is fine.
        let mut log = ExpectedLog::create(&p).expect("create");
        log.intent(0, false, &ops).expect("intent");
        log.failed(0, true).expect("failed");
        log.intent(1, false, &ops).expect("intent");
        log.failed(1, false).expect("failed");
        drop(log);
        let got = read_log(&p).expect("parse");
        assert_eq!((got[0].failed, got[1].failed), (Some(true), Some(false)));
        assert!(!got[0].acked);
    }

    #[test]
    fn soak_merge_appends_and_keeps_the_tail() {
        assert_eq!(soak_merge(None, b"a"), b"+a");
        assert_eq!(soak_merge(Some(b"x"), b"a"), b"x+a");
        let long = soak_merge(Some(&[b'v'; 300]), b"end");
        assert_eq!(long.len(), 256);
        assert!(long.ends_with(b"v+end"));
    }
}
