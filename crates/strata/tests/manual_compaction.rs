//! Manual compaction goes through each policy's own pick (RocksDB's
//! `CompactionPicker::CompactRange`): under every built-in policy a partial and
//! a full `compact_range` keep every answer, empty L0, and write files of the
//! size the policy's merges use.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{builtin_policies, policy_options};
use strata::{Db, MemVfs};

fn k(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

#[test]
fn manual_compaction_under_every_policy_uses_the_policys_pick() {
    for style in builtin_policies() {
        let vfs = Arc::new(MemVfs::new());
        let opts = policy_options(&style, vfs);
        let mut db = Db::open("/db", opts.clone()).unwrap();
        let mut model = BTreeMap::new();
        for round in 0..6u32 {
            // The background shapes the tree first; then, with it off, the last
            // rounds stay in L0 for the manual compaction to move.
            if round == 4 {
                db.close().unwrap();
                db = Db::open("/db", opts.clone().with_disable_auto_compactions(true)).unwrap();
            }
            for i in 0..800u32 {
                let key = (i * 7919 + round * 131) % 2000;
                let v = format!("v{round}-{i}").repeat(3).into_bytes();
                db.put(k(key), &v).unwrap();
                model.insert(k(key), v);
                if i % 9 == 0 {
                    db.delete(k((key + 1) % 2000)).unwrap();
                    model.remove(&k((key + 1) % 2000));
                }
            }
        }
        db.compact_range(Some(&k(500)), Some(&k(900))).unwrap();
        db.compact_range(None, None).unwrap();
        let s = db.stats();
        assert_eq!(s.levels[0].files, 0, "{style:?}: L0 left after a full manual compaction\n{s}");
        let manual: Vec<_> = s.recent_compactions.iter().filter(|r| r.reason.contains("manual")).collect();
        assert!(!manual.is_empty(), "{style:?}: no manual compaction recorded\n{s}");
        // LSbM cuts super-file parts of a quarter of the 8 KiB target (dLSM
        // cuts none smaller than 1 MiB, so here whole files).
        let target = if style.name() == "lsbm" { 2 << 10 } else { 8 << 10 };
        for r in &manual {
            let avg = r.bytes_written / r.output_files.max(1) as u64;
            // Data is cut at the target; the filter, index, properties and
            // footer come on top (about 1 KiB on an 8 KiB file of short entries).
            assert!(
                avg <= target + target / 4,
                "{style:?}: {avg} bytes per file against a {target} target: {r:?}"
            );
        }
        for (key, v) in &model {
            assert_eq!(db.get(key).unwrap().as_ref(), Some(v), "{style:?}");
        }
        assert_eq!(db.iter().count(), model.len(), "{style:?}");
        db.close().unwrap();
    }
}
