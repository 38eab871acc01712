//! Secondary instances: a read-only view of a database another handle keeps
//! writing, brought up to date by `try_catch_up_with_primary`, every keyspace
//! included, never ahead of what the primary wrote.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use strata::{CompactionStyle, Db, Error, KeyspaceOptions, Options, WriteOptions};

fn small() -> Options {
    Options::default()
        .with_write_buffer_size(16 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_level0_file_num_compaction_trigger(2)
}

#[test]
fn a_secondary_sees_the_primary_as_of_its_last_catch_up() {
    let dir = tempfile::tempdir().unwrap();
    let (p, s) = (dir.path().join("db"), dir.path().join("secondary"));
    let primary = Db::open(&p, small()).unwrap();
    let hot = primary
        .create_keyspace("hot", KeyspaceOptions::default().with_compaction_style(CompactionStyle::Tiered))
        .unwrap();
    primary.put("a", "1").unwrap();
    hot.put("h", "1").unwrap();
    let secondary = Db::open_as_secondary(&p, &s, Options::default()).unwrap();
    assert!(s.join("LOG").exists(), "the secondary keeps its info log in its own directory");
    let sec_hot = secondary.keyspace("hot").unwrap();
    assert_eq!(secondary.get("a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(sec_hot.get("h").unwrap(), Some(b"1".to_vec()));
    assert_eq!(sec_hot.options().compaction_style().name(), "tiered");
    // Writes, flushes and compactions of the primary, then a catch-up.
    for i in 0..2000u32 {
        primary.put(format!("k{i:05}"), [b'v'; 40]).unwrap();
        hot.put(format!("k{i:05}"), "hot").unwrap();
    }
    primary.delete("a").unwrap();
    primary.flush().unwrap();
    primary.compact_range(None, None).unwrap();
    let cold = primary.create_keyspace("cold", KeyspaceOptions::default()).unwrap();
    cold.put("c", "1").unwrap();
    assert_eq!(secondary.get("k01999").unwrap(), None);
    assert!(secondary.keyspace("cold").is_err());
    secondary.try_catch_up_with_primary().unwrap();
    assert_eq!(secondary.get("a").unwrap(), None);
    assert_eq!(secondary.get("k01999").unwrap(), Some(vec![b'v'; 40]));
    assert_eq!(sec_hot.get("k00000").unwrap(), Some(b"hot".to_vec()), "an old handle reads the new state");
    assert_eq!(secondary.iter().count(), 2000);
    assert_eq!(secondary.keyspace("cold").unwrap().get("c").unwrap(), Some(b"1".to_vec()));
    // A dropped keyspace goes at the next catch-up.
    primary.drop_keyspace("hot").unwrap();
    secondary.try_catch_up_with_primary().unwrap();
    assert!(matches!(sec_hot.get("h"), Err(Error::KeyspaceNotFound(_))));
    // It writes nothing and takes no lock.
    assert!(matches!(secondary.put("x", "1"), Err(Error::NotSupported(_))));
    assert!(matches!(secondary.flush(), Err(Error::NotSupported(_))));
    primary.put("after", "1").unwrap();
    primary.close().unwrap();
    secondary.try_catch_up_with_primary().unwrap();
    assert_eq!(secondary.get("after").unwrap(), Some(b"1".to_vec()), "caught up after the primary closed");
}

#[test]
fn catching_up_is_refused_while_a_snapshot_is_live_and_needs_a_secondary() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let primary = Db::open(&p, Options::default()).unwrap();
    primary.put("k", "1").unwrap();
    let secondary = Db::open_as_secondary(&p, dir.path().join("s"), Options::default()).unwrap();
    let snap = secondary.snapshot();
    primary.put("k", "2").unwrap();
    assert!(matches!(secondary.try_catch_up_with_primary(), Err(Error::Busy(_))));
    assert_eq!(snap.get("k").unwrap(), Some(b"1".to_vec()));
    drop(snap);
    secondary.try_catch_up_with_primary().unwrap();
    assert_eq!(secondary.get("k").unwrap(), Some(b"2".to_vec()));
    assert!(matches!(primary.try_catch_up_with_primary(), Err(Error::NotSupported(_))));
    let read_only = Db::open_read_only(&p, Options::default()).unwrap();
    assert!(matches!(read_only.try_catch_up_with_primary(), Err(Error::NotSupported(_))));
    assert!(matches!(
        Db::open_as_secondary(dir.path().join("none"), dir.path().join("s2"), Options::default()),
        Err(Error::NotADatabase(_))
    ));
}

#[test]
fn catch_ups_beside_a_busy_primary_show_a_prefix_of_its_writes_and_every_acknowledged_one() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db");
    let primary = Db::open(&p, small()).unwrap();
    primary.put("k0000000", "0").unwrap();
    let secondary = Db::open_as_secondary(&p, dir.path().join("s"), Options::default()).unwrap();
    // The writer puts keys in order, one write each; `acked` is the last
    // index whose put returned.
    let acked = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            let wo = WriteOptions::default();
            let mut i = 1u64;
            while !stop.load(Ordering::Acquire) {
                primary.put_opt(format!("k{i:07}"), i.to_string(), &wo).unwrap();
                acked.store(i, Ordering::Release);
                i += 1;
            }
        });
        let mut last = 0;
        for round in 0..25 {
            let before = acked.load(Ordering::Acquire);
            secondary.try_catch_up_with_primary().unwrap_or_else(|e| panic!("round {round}: {e}"));
            let mut n = 0u64;
            for kv in secondary.iter() {
                let (k, v) = kv.unwrap();
                assert_eq!(k, format!("k{n:07}").into_bytes(), "round {round}: not a prefix at {n}");
                assert_eq!(v, n.to_string().into_bytes(), "round {round}");
                n += 1;
            }
            assert!(n > before, "round {round}: acknowledged write {before} missing ({n} keys)");
            assert!(n >= last, "round {round}: went back from {last} to {n}");
            last = n;
            // Wait for new writes (a condition, not a time) before the next round.
            while acked.load(Ordering::Acquire) < last + 50 {
                thread::yield_now();
            }
        }
        stop.store(true, Ordering::Release);
    });
    assert!(primary.stats().flushes > 0, "the writer's flushes ran during the catch-ups");
}
