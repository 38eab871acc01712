//! `TtlDb` end to end with a hand-moved clock: every read path hides expired
//! values and returns the user's bytes, compactions remove expired values
//! (and run the user's own filter on the rest), a reopen applies its TTL;
//! every keyspace has its own TTL, the TTL is recorded, and plain and TTL
//! opens of each other's trees are refused (issue 28).

use std::sync::Arc;
use std::time::Duration;

use strata::ttl::{recorded_ttls, ManualClock, TtlDb};
use strata::{Db, Decision, Error, KeyspaceOptions, MemVfs, Options, ReadOptions, Vfs, WriteBatch};

const SEC: Duration = Duration::from_secs(1);

fn options(vfs: &Arc<dyn Vfs>) -> Options {
    Options::default().with_vfs(vfs.clone()).with_write_buffer_size(16 << 10).with_block_size(512)
}

fn pairs(it: impl Iterator<Item = strata::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<(String, String)> {
    it.map(|kv| {
        let (k, v) = kv.expect("iterate");
        (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap())
    })
    .collect()
}

fn kv(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

#[test]
fn expired_values_are_hidden_from_every_read_then_compacted_away() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let clock = Arc::new(ManualClock::new(1_000_000));
    let db = TtlDb::open_with_clock("/db", options(&vfs), 10 * SEC, clock.clone()).unwrap();
    db.put(b"a", b"1").unwrap();
    let mut batch = WriteBatch::new();
    batch.put(b"b", b"2");
    batch.put(b"c", b"");
    batch.delete(b"a");
    batch.put(b"a", b"3");
    db.write(batch).unwrap();
    clock.advance(5 * SEC);
    db.put(b"d", b"4").unwrap();
    let snap = db.snapshot();
    db.flush().unwrap();
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b""[..]), "an empty value");
    assert_eq!(pairs(db.iter()), vec![kv("a", "3"), kv("b", "2"), kv("c", ""), kv("d", "4")]);

    // 10 s after the batch exactly: still live (expiry is strictly past the TTL).
    clock.advance(5 * SEC);
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    let early = db.iter();
    clock.advance(Duration::from_millis(1));
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap(), None);
    assert_eq!(db.get(b"d").unwrap().as_deref(), Some(&b"4"[..]));
    assert_eq!(pairs(db.iter()), vec![kv("d", "4")]);
    assert_eq!(pairs(db.iter().rev()), vec![kv("d", "4")]);
    assert_eq!(pairs(db.range(&b"b"[..]..&b"e"[..])), vec![kv("d", "4")]);
    // An iterator judges expiry when it was made.
    assert_eq!(pairs(early).len(), 4, "made before the batch expired");
    // The snapshot reads the versions it was taken at, judged now.
    assert_eq!(snap.get(b"a").unwrap(), None);
    assert_eq!(snap.get(b"d").unwrap().as_deref(), Some(&b"4"[..]));
    assert_eq!(pairs(snap.iter()), vec![kv("d", "4")]);
    db.put(b"d", b"5").unwrap();
    assert_eq!(db.get_opt(b"d", &snap.read_options()).unwrap().as_deref(), Some(&b"4"[..]));
    assert_eq!(pairs(db.range_opt::<&[u8], _>(.., &snap.read_options())), vec![kv("d", "4")]);
    assert_eq!(db.get(b"d").unwrap().as_deref(), Some(&b"5"[..]));

    // The snapshot keeps what it sees; once released, a compaction removes
    // the expired values from the files.
    db.compact_range(None, None).unwrap();
    assert_eq!(db.stats().compaction_filter_removed, 0, "the snapshot sees them all");
    drop(snap);
    // Nothing above L1 now: the filter makes compact_range rewrite it anyway.
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert_eq!(s.compaction_filter_removed, 3, "a, b, c\n{s}");
    let raw: Vec<(Vec<u8>, Vec<u8>)> = db.base_db().iter().map(Result::unwrap).collect();
    assert_eq!(raw.len(), 1, "only d is left in the files");
    assert_eq!(raw[0].0, b"d");
    assert_eq!(&raw[0].1[..1], b"5");
    assert_eq!(raw[0].1[1..], (1_010_001u64).to_le_bytes(), "the write time, little-endian ms");
    // d (written at 1 010 001 ms) expires in turn.
    clock.advance(10 * SEC);
    assert_eq!(db.get(b"d").unwrap().as_deref(), Some(&b"5"[..]));
    clock.advance(Duration::from_millis(1));
    assert_eq!(db.get(b"d").unwrap(), None);
    assert_eq!(db.iter().count(), 0);
    db.delete(b"d").unwrap();
    db.close().unwrap();
}

#[test]
fn the_users_filter_runs_on_live_values_without_their_write_time() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let clock = Arc::new(ManualClock::new(0));
    let user = |_: usize, key: &[u8], value: &[u8]| match key {
        b"upper" => Decision::ChangeValue(value.to_ascii_uppercase()),
        b"remove" => Decision::Remove,
        _ => {
            // Values reach it without the 8 stamp bytes.
            assert!(value.len() < 8, "{value:?}");
            Decision::Keep
        }
    };
    let opts = options(&vfs).with_compaction_filter(Arc::new(user));
    let db = TtlDb::open_with_clock("/db", opts, 10 * SEC, clock.clone()).unwrap();
    db.put(b"old", b"x").unwrap();
    clock.advance(6 * SEC);
    for k in ["upper", "remove", "keep"] {
        db.put(k, b"abc").unwrap();
    }
    clock.advance(5 * SEC);
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert_eq!(
        (s.compaction_filter_removed, s.compaction_filter_changed),
        (2, 1),
        "old and remove; upper\n{s}"
    );
    assert_eq!(pairs(db.iter()), vec![kv("keep", "abc"), kv("upper", "ABC")]);
    // The changed value kept its write time: it expires with the others.
    clock.advance(5 * SEC);
    assert_eq!(db.get(b"upper").unwrap().as_deref(), Some(&b"ABC"[..]));
    clock.advance(SEC);
    assert_eq!(db.get(b"upper").unwrap(), None);
}

#[test]
fn a_reopen_applies_its_own_ttl() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let clock = Arc::new(ManualClock::new(0));
    // No compaction: what is hidden is decided by reads alone.
    let opts = || options(&vfs).with_disable_auto_compactions(true);
    let db = TtlDb::open_with_clock("/db", opts(), 100 * SEC, clock.clone()).unwrap();
    assert_eq!(db.ttl(), 100 * SEC);
    for k in ["a", "k", "z"] {
        db.put(k, b"v").unwrap();
    }
    db.close().unwrap();
    clock.advance(50 * SEC);
    let db = TtlDb::open_with_clock("/db", opts(), 10 * SEC, clock.clone()).unwrap();
    assert_eq!(db.get(b"k").unwrap(), None, "50 s old under a 10 s TTL");
    db.close().unwrap();
    let db = TtlDb::open_with_clock("/db", opts(), 100 * SEC, clock.clone()).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]), "not compacted away, live again");
    db.close().unwrap();
    // A zero TTL keeps values for ever; they are still stamped.
    clock.advance(1_000_000 * SEC);
    let db = TtlDb::open_with_clock("/db", opts(), Duration::ZERO, clock.clone()).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.compact_range(None, None).unwrap();
    assert_eq!(db.stats().compaction_filter_removed, 0);
    db.close().unwrap();
    // Under a TTL again, a compaction removes it.
    let db = TtlDb::open_with_clock("/db", opts(), 100 * SEC, clock.clone()).unwrap();
    assert_eq!(db.get(b"k").unwrap(), None);
    db.put(b"fresh", b"f").unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.stats().compaction_filter_removed, 3, "a, k, z");
    assert_eq!(db.base_db().iter().count(), 1, "only the fresh value is in the files");
}

#[test]
fn a_value_written_without_its_stamp_reads_as_corruption() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = TtlDb::open_with_clock("/db", options(&vfs), SEC, Arc::new(ManualClock::new(0))).unwrap();
    db.base_db().put(b"short", b"abc").unwrap();
    assert!(db.get(b"short").unwrap_err().is_corruption());
    assert!(db.iter().next().expect("one entry").unwrap_err().is_corruption());
    // A compaction leaves such a value alone.
    db.compact_range(None, None).unwrap();
    assert_eq!(db.base_db().get_opt(b"short", &ReadOptions::new()).unwrap().as_deref(), Some(&b"abc"[..]));
}

fn invalid(r: strata::Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(Error::InvalidArgument(m)) => m,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn plain_open_of_a_ttl_database_does_not_return_stamped_values() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let clock = Arc::new(ManualClock::new(0));
    let db = TtlDb::open_with_clock("/db", options(&vfs), 60 * SEC, clock.clone()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    for r in [Db::open("/db", options(&vfs)), Db::open_read_only("/db", options(&vfs))] {
        let m = invalid(r);
        assert!(
            m.contains("default keyspace stores values with TTL stamps") && m.contains("TtlDb::open"),
            "{m}"
        );
    }
    // A TTL keyspace beside a plain default one is refused too, given options or not.
    let db = TtlDb::open_with_clock("/db", options(&vfs), 60 * SEC, clock.clone()).unwrap();
    db.create_keyspace("ks", KeyspaceOptions::default(), SEC).unwrap().put(b"k", b"v").unwrap();
    db.close().unwrap();
    let m = invalid(Db::open("/db", options(&vfs)));
    assert!(m.contains("TTL stamps"), "{m}");
    let with_ks = || options(&vfs).with_keyspace("ks", KeyspaceOptions::default());
    for r in [Db::open("/db", with_ks()), Db::open_read_only("/db", with_ks())] {
        assert!(invalid(r).contains("TTL stamps"));
    }
    // Refused, nothing changed: TtlDb still reads it.
    let db = TtlDb::open_with_clock("/db", options(&vfs), 60 * SEC, clock).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db.keyspace("ks").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn ttl_applies_to_every_keyspace() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let clock = Arc::new(ManualClock::new(1_000_000));
    let opts = || options(&vfs).with_disable_auto_compactions(true);
    let db = TtlDb::open_with_clock("/db", opts(), 100 * SEC, clock.clone()).unwrap();
    let short = db.create_keyspace("short", KeyspaceOptions::default(), 10 * SEC).unwrap();
    let plain = db.base_db().create_keyspace("plain", KeyspaceOptions::default()).unwrap();
    assert!(invalid(db.keyspace("plain")).contains("plain values"));
    assert!(matches!(db.keyspace("nope"), Err(Error::KeyspaceNotFound(_))));
    db.put(b"a", b"default").unwrap();
    short.put(b"a", b"short").unwrap();
    let mut batch = WriteBatch::new();
    batch.put_cf(short.keyspace(), b"b", b"batched");
    batch.put_cf(&plain, b"p", b"as is");
    batch.put(b"b", b"default");
    db.write(batch).unwrap();
    assert_eq!(plain.get(b"p").unwrap().as_deref(), Some(&b"as is"[..]), "a plain keyspace is not stamped");
    assert_eq!(short.get(b"b").unwrap().as_deref(), Some(&b"batched"[..]));
    assert_eq!(short.keyspace().get(b"b").unwrap().map(|v| v.len()), Some(7 + 8), "stamped");
    let snap = short.snapshot();
    short.delete(b"b").unwrap();
    assert_eq!(snap.get(b"b").unwrap().as_deref(), Some(&b"batched"[..]));
    assert_eq!(pairs(snap.iter()), vec![kv("a", "short"), kv("b", "batched")]);
    assert_eq!(pairs(short.iter()), vec![kv("a", "short")]);

    clock.advance(11 * SEC);
    assert_eq!(short.get(b"a").unwrap(), None, "the keyspace's 10 s");
    assert_eq!(snap.get(b"b").unwrap(), None, "a snapshot judges expiry at the read");
    assert_eq!(pairs(short.iter().rev()), vec![]);
    assert_eq!(pairs(short.range(&b"a"[..]..)), vec![]);
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"default"[..]), "the default keyspace's 100 s");
    let stamped = short.get_with_write_time(b"a").unwrap().unwrap();
    assert_eq!((stamped.written_millis, stamped.expired), (1_000_000, true));
    drop(snap);
    // Its compaction filter removes what expired in its files.
    short.flush().unwrap();
    short.compact_range(None, None).unwrap();
    assert_eq!(short.keyspace().iter().count(), 0);
    db.close().unwrap();

    // Reopened: the keyspace keeps its TTL and its filter.
    let db = TtlDb::open_with_clock("/db", opts(), 100 * SEC, clock.clone()).unwrap();
    let short = db.keyspace("short").unwrap();
    assert_eq!(short.ttl(), 10 * SEC);
    short.put(b"c", b"3").unwrap();
    clock.advance(5 * SEC);
    short.put(b"d", b"4").unwrap();
    clock.advance(6 * SEC);
    assert_eq!(pairs(short.iter()), vec![kv("d", "4")]);
    short.flush().unwrap();
    short.compact_range(None, None).unwrap();
    assert_eq!(short.keyspace().iter().count(), 1, "c compacted away");
    assert_eq!(db.base_db().keyspace("plain").unwrap().get(b"p").unwrap().as_deref(), Some(&b"as is"[..]));
    db.drop_keyspace("short").unwrap();
    assert!(db.keyspace("short").is_err());
}

#[test]
fn the_ttl_is_recorded_and_reopen_uses_it() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let clock = Arc::new(ManualClock::new(0));
    let opts = || options(&vfs).with_disable_auto_compactions(true);
    let db = TtlDb::open_with_clock("/db", opts(), 100 * SEC, clock.clone()).unwrap();
    db.create_keyspace("ks", KeyspaceOptions::default(), 20 * SEC).unwrap().put(b"k", b"v").unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let recorded = |want: &[(&str, Duration)]| {
        let want: Vec<(String, Duration)> = want.iter().map(|(n, t)| (n.to_string(), *t)).collect();
        assert_eq!(recorded_ttls("/db", &options(&vfs)).unwrap(), want);
    };
    recorded(&[("default", 100 * SEC), ("ks", 20 * SEC)]);

    // The TTL given at open applies and replaces the recorded one (RocksDB's rule).
    clock.advance(50 * SEC);
    let db = TtlDb::open_with_clock("/db", opts(), 10 * SEC, clock.clone()).unwrap();
    assert_eq!(db.get(b"k").unwrap(), None);
    assert_eq!(db.keyspace("ks").unwrap().ttl(), 20 * SEC, "a keyspace keeps its own");
    db.close().unwrap();
    recorded(&[("default", 10 * SEC), ("ks", 20 * SEC)]);

    // A read-only open takes every recorded TTL and writes nothing.
    let ro = TtlDb::open_read_only_with_clock("/db", options(&vfs), clock.clone()).unwrap();
    assert_eq!((ro.ttl(), ro.keyspace("ks").unwrap().ttl()), (10 * SEC, 20 * SEC));
    assert_eq!(ro.get(b"k").unwrap(), None);
    assert!(ro.put(b"x", b"y").is_err());
    drop(ro);

    let long = [("ks", 100 * SEC)];
    let db = TtlDb::open_with_keyspace_ttls("/db", opts(), 10 * SEC, &long, clock.clone()).unwrap();
    assert_eq!(db.keyspace("ks").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
    recorded(&[("default", 10 * SEC), ("ks", 100 * SEC)]);
    let db = TtlDb::open_with_clock("/db", opts(), 10 * SEC, clock.clone()).unwrap();
    assert_eq!(db.keyspace("ks").unwrap().ttl(), 100 * SEC, "the new one, recorded");
    db.close().unwrap();
    assert!(matches!(
        TtlDb::open_with_keyspace_ttls("/db", opts(), SEC, &[("nope", SEC)], clock),
        Err(Error::KeyspaceNotFound(_))
    ));
}

#[test]
fn ttl_open_of_a_plain_database_with_data_is_refused() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let clock = Arc::new(ManualClock::new(0));
    let db = Db::open("/db", options(&vfs)).unwrap();
    db.put(b"short", b"abc").unwrap();
    db.create_keyspace("plain", KeyspaceOptions::default()).unwrap();
    db.close().unwrap();
    let m = invalid(TtlDb::open_with_clock("/db", options(&vfs), SEC, clock.clone()));
    assert!(m.contains("plain values") && m.contains("Db::open"), "{m}");
    assert!(invalid(TtlDb::open_read_only_with_clock("/db", options(&vfs), clock.clone()))
        .contains("plain values"));
    let db = Db::open("/db", options(&vfs)).unwrap();
    assert_eq!(db.get(b"short").unwrap().as_deref(), Some(&b"abc"[..]), "untouched");
    assert!(recorded_ttls("/db", &options(&vfs)).unwrap().is_empty());
    // Emptied, it may become a TTL database; a plain keyspace cannot be given a TTL.
    db.delete(b"short").unwrap();
    db.close().unwrap();
    let m =
        invalid(TtlDb::open_with_keyspace_ttls("/db", options(&vfs), SEC, &[("plain", SEC)], clock.clone()));
    assert!(m.contains("\"plain\" stores plain values"), "{m}");
    let db = TtlDb::open_with_clock("/db", options(&vfs), SEC, clock).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    assert_eq!(recorded_ttls("/db", &options(&vfs)).unwrap(), [("default".to_string(), SEC)]);
}

#[test]
fn repair_of_a_ttl_database_keeps_its_ttl_record() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let clock = Arc::new(ManualClock::new(0));
    let db = TtlDb::open_with_clock("/db", options(&vfs), 60 * SEC, clock.clone()).unwrap();
    db.put(b"k", b"v").unwrap();
    let ks = db.create_keyspace("ks", KeyspaceOptions::default(), SEC).unwrap();
    ks.put(b"k", b"v").unwrap();
    ks.flush().unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    // Repair reads no values: a TTL tree is no reason to refuse it.
    strata::repair("/db", options(&vfs)).unwrap();
    assert!(invalid(Db::open("/db", options(&vfs))).contains("TTL stamps"));
    let want: Vec<(String, Duration)> = vec![("default".into(), 60 * SEC), ("ks".into(), SEC)];
    assert_eq!(recorded_ttls("/db", &options(&vfs)).unwrap(), want);
    let db = TtlDb::open_with_clock("/db", options(&vfs), 60 * SEC, clock).unwrap();
    assert_eq!(db.keyspace("ks").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}
