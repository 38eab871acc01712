//! WAL reader: `LogReader` over arbitrary bytes in every `WalRecoveryMode`,
//! with `WriteBatch::from_data` on each record. The first byte picks the
//! input's meaning: arbitrary log bytes (no panic, termination), or records
//! (write batches or raw payloads, some spanning 32 KiB blocks) written with
//! `LogWriter` and then optionally damaged. Whatever the damage, the records
//! read back are the written ones in order: a prefix in the tail and
//! point-in-time modes, a subsequence in skip mode, never a glued or altered
//! record.

use strata::wal::{LogReader, LogWriter};
use strata::{WalRecoveryMode, WriteBatch};

use super::input::Input;
use super::mem::{ChunkedReader, MemFile};

const MODES: [WalRecoveryMode; 4] = [
    WalRecoveryMode::TolerateCorruptedTailRecords,
    WalRecoveryMode::AbsoluteConsistency,
    WalRecoveryMode::PointInTimeRecovery,
    WalRecoveryMode::SkipAnyCorruptedRecords,
];

/// The fuzz body.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let chunk = input.below(4) * 1000;
    if input.u8().is_multiple_of(4) {
        let bytes = input.rest().to_vec();
        for mode in MODES {
            let _ = read_all(bytes.clone(), chunk, mode);
        }
        return;
    }
    let records = gen_records(&mut input);
    let file = MemFile::default();
    let mut writer = LogWriter::new(Box::new(file.clone()));
    for r in &records {
        writer.add_record(r).expect("add record");
    }
    writer.flush().expect("flush log");
    let mut bytes = file.bytes();
    let damaged = input.damage(&mut bytes, 60, true);
    for mode in MODES {
        let (got, err) = read_all(bytes.clone(), chunk, mode);
        if !damaged {
            assert!(err.is_none(), "{mode:?}: undamaged log failed: {err:?}");
            assert_eq!(got, records, "{mode:?}: undamaged log read back differently");
        }
        if let Some(e) = &err {
            assert!(e.is_corruption(), "{mode:?}: damage gave a non-corruption error: {e}");
        }
        if mode == WalRecoveryMode::SkipAnyCorruptedRecords {
            assert!(is_subsequence(&got, &records), "{mode:?}: a record that was never written");
        } else {
            assert_eq!(got[..], records[..got.len()], "{mode:?}: not a prefix of the written records");
        }
    }
}

/// Reads every record (and decodes it as a batch); returns the records and the
/// error that ended the read, if any.
fn read_all(bytes: Vec<u8>, chunk: usize, mode: WalRecoveryMode) -> (Vec<Vec<u8>>, Option<strata::Error>) {
    let max = bytes.len() / 7 + 1; // A record costs at least its 7-byte header.
    let mut reader = LogReader::new(Box::new(ChunkedReader::new(bytes, chunk)), mode);
    let mut out = Vec::new();
    loop {
        match reader.read_record() {
            Ok(Some(r)) => {
                if let Ok(batch) = WriteBatch::from_data(r.clone()) {
                    let _ = batch.sequence();
                    assert!(
                        batch.iter().all(|op| op.is_ok()),
                        "from_data accepted a batch that fails to iterate"
                    );
                }
                out.push(r);
                assert!(out.len() <= max, "log reader does not terminate");
            }
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}

fn gen_records(input: &mut Input) -> Vec<Vec<u8>> {
    let mut records = Vec::new();
    for _ in 0..input.below(12) {
        let record = match input.u8() % 4 {
            0 => input.bytes(40),
            1 => {
                // A large record: fragments across 32 KiB blocks.
                let fill = input.u8();
                vec![fill; 1 + input.u16() as usize % 70_000]
            }
            _ => {
                let mut b = WriteBatch::new();
                b.set_sequence(u64::from(input.u32()));
                for _ in 0..input.below(5) {
                    let key = input.bytes(8);
                    if input.chance(60) {
                        b.delete(key);
                    } else {
                        let value = input.bytes(30);
                        b.put(key, value);
                    }
                }
                b.data().to_vec()
            }
        };
        records.push(record);
    }
    records
}

fn is_subsequence(got: &[Vec<u8>], all: &[Vec<u8>]) -> bool {
    let mut rest = all.iter();
    got.iter().all(|g| rest.any(|r| r == g))
}
