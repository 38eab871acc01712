//! Idle compaction (`Options::with_idle_compaction`, the dLSM paper's
//! aggressive compaction) through the engine: every policy settles an idle
//! tree into one level with its buffers emptied and every answer unchanged;
//! a tree that has not been idle long enough is left as the policy keeps
//! it; the option is persisted per tree like the other shape options.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use strata::{CompactionStyle, Db, KeyspaceOptions, MemVfs, Options, Stats, Vfs};

fn small(vfs: &Arc<MemVfs>) -> Options {
    Options::default()
        .with_vfs(vfs.clone())
        .with_write_buffer_size(8 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_level0_file_num_compaction_trigger(3)
        .with_num_levels(5)
        .with_block_size(512)
}

/// Overwrites and deletes over 3000 keys (about 170 KB live: more than L1's
/// 32 KiB), a flush at the end.
fn load(put: impl Fn(&[u8], &[u8]), del: impl Fn(&[u8])) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for i in 0..6000u32 {
        let k = format!("key{:05}", (i * 7919) % 3000).into_bytes();
        if i % 13 == 0 {
            del(&k);
            model.remove(&k);
        } else {
            let v = format!("value {i} {}", "x".repeat(40)).into_bytes();
            put(&k, &v);
            model.insert(k, v);
        }
    }
    model
}

/// The newest OPTIONS file's text.
fn options_text(vfs: &MemVfs) -> String {
    let dir = std::path::Path::new("/db");
    let newest = vfs.list_dir(dir).unwrap().into_iter().filter(|n| n.starts_with("OPTIONS-")).max().unwrap();
    String::from_utf8(vfs.read_file(&dir.join(newest)).unwrap()).unwrap()
}

fn levels_holding_files(s: &Stats) -> Vec<usize> {
    s.levels.iter().filter(|l| l.files > 0).map(|l| l.level).collect()
}

#[test]
fn an_idle_tree_settles_into_one_level_under_every_policy() {
    for name in CompactionStyle::builtin_names() {
        let vfs = Arc::new(MemVfs::new());
        let style = CompactionStyle::from_name(name).unwrap();
        let opts = small(&vfs).with_compaction_style(style).with_idle_compaction(Some(Duration::ZERO));
        let db = Db::open("/db", opts).unwrap();
        let model = load(|k, v| db.put(k, v).unwrap(), |k| db.delete(k).unwrap());
        db.flush().unwrap();
        // Idle work is pending compaction work: this waits for it all.
        db.wait_for_compactions().unwrap();
        let s = db.stats();
        assert_eq!(levels_holding_files(&s).len(), 1, "{name}: {s}");
        assert!(s.levels.iter().all(|l| l.buffer_tables == 0), "{name}: buffers left\n{s}");
        assert!(s.idle_compactions > 0, "{name}: {s}");
        let got: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().map(|r| r.unwrap()).collect();
        assert_eq!(got, model, "{name}");
        for (k, v) in &model {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{name}");
        }
        // Reopened, the settled tree asks for nothing more.
        drop(db);
        let db = Db::open("/db", small(&vfs)).unwrap();
        db.wait_for_compactions().unwrap();
        let again = db.stats();
        assert_eq!((again.idle_compactions, levels_holding_files(&again)), (0, levels_holding_files(&s)));
    }
}

#[test]
fn a_tree_not_idle_long_enough_keeps_the_policys_shape() {
    let vfs = Arc::new(MemVfs::new());
    let opts = small(&vfs).with_idle_compaction(Some(Duration::from_secs(3600)));
    let db = Db::open("/db", opts).unwrap();
    load(|k, v| db.put(k, v).unwrap(), |k| db.delete(k).unwrap());
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert_eq!(s.idle_compactions, 0, "{s}");
    assert!(levels_holding_files(&s).len() > 1, "the load should leave several levels: {s}");
}

#[test]
fn idle_compaction_is_recorded_per_keyspace_and_kept_on_reopen() {
    let vfs = Arc::new(MemVfs::new());
    let idle = KeyspaceOptions::new()
        .with_compaction_style(CompactionStyle::Dlsm)
        .with_write_buffer_size(8 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_idle_compaction(Some(Duration::ZERO));
    {
        let db = Db::open("/db", small(&vfs)).unwrap();
        db.create_keyspace("ks", idle).unwrap();
    }
    // Options that do not set it keep the recorded value, for the keyspace
    // (idle) and the default tree (off).
    let db = Db::open("/db", small(&vfs)).unwrap();
    let ks = db.keyspace("ks").unwrap();
    let model = load(|k, v| ks.put(k, v).unwrap(), |k| ks.delete(k).unwrap());
    load(|k, v| db.put(k, v).unwrap(), |k| db.delete(k).unwrap());
    ks.flush().unwrap();
    db.flush().unwrap();
    ks.wait_for_compactions().unwrap();
    db.wait_for_compactions().unwrap();
    let (s, d) = (ks.stats(), db.stats());
    assert_eq!(levels_holding_files(&s).len(), 1, "{s}");
    assert!(s.idle_compactions > 0 && d.idle_compactions == 0, "ks {s}\ndefault {d}");
    for (k, v) in &model {
        assert_eq!(ks.get(k).unwrap().as_ref(), Some(v));
    }
    let text = options_text(&vfs);
    assert_eq!(text.matches("idle_compaction_nanos=0").count(), 1, "{text}");
    drop((ks, db));
    // Set explicitly, it changes.
    let off = KeyspaceOptions::new().with_idle_compaction(None);
    let db = Db::open("/db", small(&vfs).with_keyspace("ks", off)).unwrap();
    drop(db);
    let text = options_text(&vfs);
    assert!(!text.contains("idle_compaction_nanos"), "{text}");
}
