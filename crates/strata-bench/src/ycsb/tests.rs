//! YCSB tests: parsing, key format, operation mix, and a smoke run of every
//! workload on a tiny Strata database.

use super::workload::Op;
use super::*;
use crate::engine::{EngineConfig, StrataEngine};

fn tiny_engine(dir: &std::path::Path) -> StrataEngine {
    let cfg = EngineConfig {
        path: dir.to_path_buf(),
        cache_size: 1 << 20,
        bloom_bits: 10.0,
        // Small memtables so the smoke run also reads from tables on disk.
        write_buffer_size: 64 << 10,
        max_file_size: 256 << 10,
        compression: "none".into(),
        use_direct_reads: false,
        max_bytes_for_level_base: 256 << 10,
        policy: "leveled".into(),
        sync: false,
        use_existing_db: false,
    };
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
    assert_eq!((loaded.benchmark.as_str(), loaded.ops), ("ycsb-load", 500));
    assert!(loaded.db_bytes > 0);
    for w in Workload::ALL {
        let (r, ops) = run_with_ops(&engine, w, &cfg).unwrap_or_else(|e| panic!("{}: {e}", w.name()));
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
