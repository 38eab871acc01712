//! The engine hands a policy the current tree when it asks for level targets
//! (stats) and bloom bits (every table it writes), so a policy can size levels
//! and filters from the levels in use.

use std::sync::{Arc, Mutex};

use strata::compaction::{LeveledConfig, LeveledPolicy, LsmView, ManualRange, PickResult};
use strata::{CompactionPolicy, CompactionStyle, Db, MemVfs, Options};

/// Leveling whose targets echo the view and whose bloom question records it.
#[derive(Debug)]
struct ViewEcho {
    inner: LeveledPolicy,
    /// (level written, files in the view) per bloom-bits question.
    asked: Mutex<Vec<(usize, usize)>>,
}

fn files(view: &LsmView) -> usize {
    view.levels.iter().map(|l| l.num_files()).sum()
}

impl CompactionPolicy for ViewEcho {
    fn name(&self) -> &str {
        "view-echo"
    }
    fn num_levels(&self) -> usize {
        self.inner.num_levels()
    }
    fn pick(&self, view: &LsmView) -> Option<PickResult> {
        self.inner.pick(view)
    }
    fn scores(&self, view: &LsmView) -> Vec<f64> {
        self.inner.scores(view)
    }
    fn compact_range(&self, view: &LsmView, level: usize, range: &ManualRange<'_>) -> Option<PickResult> {
        self.inner.compact_range(view, level, range)
    }
    fn level_target_bytes(&self, view: &LsmView, level: usize) -> Option<u64> {
        (level > 0).then(|| files(view) as u64)
    }
    fn bloom_bits_for_level(&self, view: &LsmView, level: usize, default_bits: f64) -> f64 {
        self.asked.lock().unwrap().push((level, files(view)));
        default_bits
    }
}

#[test]
fn flushes_merges_recovery_and_stats_pass_the_current_tree() {
    let inner = LeveledPolicy::new(LeveledConfig::default()).unwrap();
    let policy = Arc::new(ViewEcho { inner, asked: Mutex::default() });
    let opts = Options::default()
        .with_vfs(Arc::new(MemVfs::new()))
        .with_compaction_style(CompactionStyle::Custom(policy.clone()))
        .with_disable_auto_compactions(true);
    let asked = || std::mem::take(&mut *policy.asked.lock().unwrap());
    let target = |db: &Db| db.stats().levels[1].target_bytes;

    let db = Db::open("/db", opts.clone()).unwrap();
    assert_eq!(target(&db), Some(0));
    db.put(b"a", b"1").unwrap();
    db.flush().unwrap();
    db.put(b"b", b"2").unwrap();
    db.flush().unwrap();
    assert_eq!(asked(), vec![(0, 0), (0, 1)], "each flush sees the tables before it");
    assert_eq!(target(&db), Some(2));
    db.compact_range(None, None).unwrap();
    assert_eq!(asked(), vec![(1, 2)], "the merge sees its inputs");
    assert_eq!(target(&db), Some(1));

    // Unflushed writes are replayed from the WAL into the tree read back from the MANIFEST.
    db.put(b"c", b"3").unwrap();
    db.close().unwrap();
    let db = Db::open("/db", opts).unwrap();
    assert_eq!(asked(), vec![(0, 1)], "the recovery flush sees the recovered tree");
    assert_eq!(target(&db), Some(2));
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"3"[..]));
    db.close().unwrap();
}
