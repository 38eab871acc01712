//! YCSB tests: parsing, key format, operation mix, and a smoke run of every
//! workload on a tiny Strata database.

use super::workload::Op;
use super::*;
use crate::engine::{EngineConfig, StrataEngine};

fn tiny_engine(dir: &std::path::Path) -> StrataEngine {
    // Small memtables so the smoke run also reads from tables on disk.
    let cfg = EngineConfig::small(dir);
    match StrataEngine::open(&cfg) {
        Ok(e) => e,
        Err(e) => panic!("open strata: {e}"),
    }
}

#[test]
fn parse_and_names() {
    for (s, w) in
        [("a", Workload::A), ("ycsbb", Workload::B), ("YCSB-C", Workload::C), ("workloadd", Workload::D)]
    {
        assert_eq!(Workload::parse(s), Ok(w), "{s}");
    }
    assert_eq!(Workload::parse("f").map(|w| w.name()), Ok("ycsb-f"));
    let err = Workload::parse("g").err().unwrap_or_default();
    assert!(err.contains("a, b, c, d, e, f"), "{err}");
}

#[test]
fn keys_are_hashed_user_keys() {
    let mut k = Vec::new();
    ycsb_key_into("user", 0, &mut k);
    assert_eq!(k, format!("user{}", crate::gen::fnv_hash64(0)).into_bytes());
    let mut k2 = Vec::new();
    ycsb_key_into("user", 1, &mut k2);
    assert_ne!(k, k2);
}

#[test]
fn mix_proportions() {
    let mix = Workload::E.mix();
    let n = 100_000;
    let scans = (0..n).filter(|i| mix.pick((*i as f64 + 0.5) / n as f64) == Op::Scan).count();
    assert_eq!(scans, 95_000);
    assert!((0..n).all(|i| Workload::C.mix().pick(i as f64 / n as f64) == Op::Read));
    let rmw = (0..n).filter(|i| Workload::F.mix().pick(*i as f64 / n as f64) == Op::ReadModifyWrite).count();
    assert_eq!(rmw, 50_000);
}

#[test]
fn smoke_all_workloads_on_strata() {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let engine = tiny_engine(dir.path());
    let cfg = YcsbConfig {
        record_count: 500,
        operation_count: 2000,
        threads: 2,
        seed: 42,
        ..YcsbConfig::default()
    };
    let loaded = load(&engine, &cfg).unwrap_or_else(|e| panic!("load: {e}"));
    assert_eq!((loaded.result.benchmark.as_str(), loaded.result.ops), ("ycsb-load", 500));
    assert!(loaded.result.db_bytes > 0);
    assert_eq!(loaded.records, 500);
    let mut records = loaded.records;
    for w in Workload::ALL {
        let cfg = YcsbConfig { record_count: records, ..cfg.clone() };
        let out = run(&engine, w, &cfg).unwrap_or_else(|e| panic!("{}: {e}", w.name()));
        let ops = out.result.op_latencies.clone();
        let r = out.result;
        assert_eq!(out.by_op.len(), ops.len());
        assert_eq!(out.total.len(), r.ops);
        records = out.records;
        assert_eq!((r.benchmark.as_str(), r.ops), (w.name(), 2000), "{}", w.name());
        assert!(r.ops_per_sec > 0.0 && r.p50_us > 0.0 && r.p50_us <= r.p99_us && r.p99_us <= r.p999_us);
        assert_eq!(ops.iter().map(|o| o.count).sum::<u64>(), 2000);
        let get = |name: &str| ops.iter().find(|o| o.op == name);
        // Every read targets an inserted key, so every read finds it.
        let reads = get("READ").map_or(0, |o| o.count) + get("READ-MODIFY-WRITE").map_or(0, |o| o.count);
        assert_eq!(r.found, reads, "{}: reads that missed", w.name());
        match w {
            Workload::A | Workload::B => assert!(get("UPDATE").is_some_and(|o| o.count > 0)),
            Workload::C => assert_eq!(ops.len(), 1),
            Workload::D => assert!(get("INSERT").is_some_and(|o| o.count > 0)),
            Workload::E => {
                let scan = get("SCAN").unwrap_or_else(|| panic!("E ran no scans"));
                // Scans of 1..=100 (mean ~50) over >= 500 keys return entries.
                assert!(
                    scan.found > scan.count * 20,
                    "scans returned {} entries in {}",
                    scan.found,
                    scan.count
                );
                assert!(get("INSERT").is_some_and(|o| o.count > 0));
            }
            Workload::F => {
                assert!(get("READ-MODIFY-WRITE").is_some_and(|o| o.found == o.count && o.count > 0))
            }
        }
    }
    // The records inserted by D and E are readable.
    let mut key = Vec::new();
    ycsb_key_into("user", cfg.record_count, &mut key);
    assert!(matches!(engine.get(&key), Ok(Some(v)) if v.len() == cfg.value_len()));
    assert!(records > cfg.record_count);
}

#[test]
fn inserts_go_on_across_workloads() {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let engine = tiny_engine(dir.path());
    let cfg = YcsbConfig { record_count: 300, operation_count: 1000, seed: 7, ..YcsbConfig::default() };
    let loaded = load(&engine, &cfg).unwrap_or_else(|e| panic!("load: {e}"));
    let inserts =
        |o: &YcsbOutcome| o.result.op_latencies.iter().find(|s| s.op == "INSERT").map_or(0, |s| s.count);
    let d = run(&engine, Workload::D, &YcsbConfig { record_count: loaded.records, ..cfg.clone() })
        .unwrap_or_else(|e| panic!("D: {e}"));
    let e = run(&engine, Workload::E, &YcsbConfig { record_count: d.records, ..cfg.clone() })
        .unwrap_or_else(|e| panic!("E: {e}"));
    let (di, ei) = (inserts(&d), inserts(&e));
    assert!(di > 0 && ei > 0, "D inserted {di}, E {ei}");
    assert_eq!((d.records, e.records), (300 + di, 300 + di + ei));
    // Every insert made a new key: none of E's overwrote one of D's.
    let (keys, _) = engine.scan(b"user", usize::MAX).unwrap_or_else(|e| panic!("scan: {e}"));
    assert_eq!(keys as u64, e.records);
}

#[test]
fn bad_config_is_an_error() {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let engine = tiny_engine(dir.path());
    let cfg = YcsbConfig { record_count: 0, ..YcsbConfig::default() };
    assert!(load(&engine, &cfg).is_err());
    let cfg = YcsbConfig { record_count: 10, zipf_const: 1.0, ..YcsbConfig::default() };
    assert!(run(&engine, Workload::A, &cfg).is_err());
}
