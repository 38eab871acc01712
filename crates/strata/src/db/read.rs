//! Point reads: memtables newest first, then each level's runs newest first,
//! consulting only the one file of a run whose key range covers the key.

use std::sync::atomic::Ordering;

use super::DbInner;
use crate::error::Result;
use crate::key::{lookup_key, SeqNum, ValueKind};
use crate::options::ReadOptions;
use crate::stats::Counters;
use crate::table::BlockReadOptions;

impl DbInner {
    /// The sequence a read without an explicit snapshot uses.
    pub(crate) fn read_seq(&self, ro: &ReadOptions) -> SeqNum {
        match &ro.snapshot {
            Some(s) => s.sequence(),
            None => self.visible_seq.load(Ordering::Acquire),
        }
    }

    pub(crate) fn get_at(&self, key: &[u8], seq: SeqNum, ro: &ReadOptions) -> Result<Option<Vec<u8>>> {
        Counters::add(&self.counters.gets, 1);
        let sv = self.sv.load_full();
        for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            if let Some((kind, value)) = mem.get(key, seq) {
                return Ok((kind == ValueKind::Put).then_some(value));
            }
        }
        let lookup = lookup_key(key, seq);
        let bro = BlockReadOptions { verify_checksums: ro.verify_checksums, fill_cache: ro.fill_cache };
        let mut probes = 0;
        let mut found = None;
        'levels: for level in &sv.version.levels {
            for run in &level.runs {
                let Some(f) = run.find_file(key) else { continue };
                probes += 1;
                let table = self.tables.get(f.id, f.size)?;
                if let Some((kind, value)) = table.get(&lookup, bro)? {
                    found = (kind == ValueKind::Put).then_some(value);
                    break 'levels;
                }
            }
        }
        Counters::add(&self.counters.get_probes, probes);
        Ok(found)
    }
}
