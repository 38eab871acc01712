//! Randomized model test: each seed's op log runs under every configuration
//! (policies x option sets x file systems) and must match a BTreeMap.

mod common;

use common::keyspaces::run_keyspace_log;
use common::{configs, gen_ops, run_log, Op};

const SEEDS: u64 = 6;
const OPS: usize = 2500;

#[test]
fn every_config_matches_the_model() {
    let mut buffer_hits = std::collections::BTreeMap::new();
    let mut row_cache = std::collections::BTreeMap::new();
    let mut warmed = std::collections::BTreeMap::new();
    let mut seeks = std::collections::BTreeMap::new();
    let mut bits = std::collections::BTreeMap::new();
    let mut lwc = std::collections::BTreeMap::new();
    let mut prefix = std::collections::BTreeMap::new();
    let mut idle = std::collections::BTreeMap::new();
    let mut rebuilds = std::collections::BTreeMap::new();
    for seed in 0..SEEDS {
        let ops = gen_ops(seed, OPS, 1500);
        for cfg in configs() {
            let stats = run_log(seed, &ops, &cfg);
            if seed == 0 {
                eprintln!("{} seed {seed}:\n{stats}", cfg.name);
            }
            *buffer_hits.entry(cfg.name).or_insert(0) += stats.buffer_hits;
            let r = row_cache.entry(cfg.name).or_insert((0, 0));
            r.0 += stats.row_cache.hits;
            r.1 += stats.row_cache.evictions;
            *warmed.entry(cfg.name).or_insert(0) += stats.warmup_blocks_inserted;
            let s = seeks.entry(cfg.name).or_insert((0, 0));
            s.0 += stats.seek_compactions;
            s.1 += stats.flushes_below_l0;
            let p = prefix.entry(cfg.name).or_insert((0, 0));
            p.0 += stats.prefix_filter_checks;
            p.1 += stats.prefix_filter_skips;
            let a = lwc.entry(cfg.name).or_insert((0, 0));
            a.0 += stats.appends;
            a.1 += stats.table_rewrites;
            *idle.entry(cfg.name).or_insert(0) += stats.idle_compactions;
            *rebuilds.entry(cfg.name).or_insert(0) += stats.filter_rebuilds;
            let levels = stats.levels.iter().filter(|l| l.files > 0);
            bits.entry(cfg.name).or_insert_with(Vec::new).extend(levels.map(|l| l.bloom_bits_per_key));
        }
    }
    // Prefix scans asked the prefix filters, and skipped tables, exactly
    // where an extractor is set (counted over each op log's sessions).
    for (name, (checks, skips)) in prefix {
        let on = name.contains("prefix");
        assert_eq!((checks > 0, skips > 0), (on, on), "{name}: {checks} prefix checks, {skips} skips");
    }
    // Light-weight compaction appended segments (and, allowed one segment,
    // rewrote tables); no other policy does either. The counts are the last
    // session's of each op log, so rewrites are required only where every
    // append to a bottom table makes one.
    for (name, (appends, rewrites)) in lwc {
        let on = name.starts_with("lwc");
        assert_eq!(appends > 0, on, "{name}: {appends} appends");
        if name.contains("seg1") {
            assert!(rewrites > 0, "{name}: no rewrites");
        } else if !on {
            assert_eq!(rewrites, 0, "{name}: {rewrites} rewrites");
        }
    }
    // Only Monkey rebuilds filters (uniform bits never drift from their share).
    for (name, n) in rebuilds {
        eprintln!("{name}: {n} filters rebuilt");
        if !name.contains("monkey") {
            assert_eq!(n, 0, "{name}: filters rebuilt under uniform bits");
        }
    }
    // Monkey really sized filters per level; plain leveling gives every level the configured bits.
    for (name, bits) in bits {
        let max = bits.iter().copied().fold(f64::MIN, f64::max);
        let min = bits.iter().copied().fold(f64::MAX, f64::min);
        if name.contains("monkey") {
            assert!(max - min > 1.0, "{name}: bits/key per level {bits:?}");
        } else if name.starts_with("leveled") {
            assert!(max - min < 1e-9, "{name}: bits/key per level {bits:?}");
        }
    }
    // The seek configurations compacted for reads; leveling also placed
    // flushes below L0 (LSbM keeps them in L0).
    for (name, (compactions, deep_flushes)) in seeks {
        let on = name.contains("seek");
        assert_eq!(compactions > 0, on, "{name}: {compactions} seek-triggered compactions");
        assert_eq!(
            deep_flushes > 0,
            on && name.starts_with("leveled"),
            "{name}: {deep_flushes} deep flushes"
        );
    }
    for (name, blocks) in warmed {
        assert_eq!(blocks > 0, name.contains("warmup"), "{name}: {blocks} blocks warmed");
    }
    // The row-cache configurations answered gets from it and evicted rows.
    for (name, (hits, evictions)) in row_cache {
        let on = name.contains("rowcache");
        assert_eq!(
            (hits > 0, evictions > 0),
            (on, on),
            "{name}: {hits} row-cache hits, {evictions} evictions"
        );
    }
    // Idle compaction ran exactly where it is on.
    for (name, tasks) in idle {
        assert_eq!(tasks > 0, name.contains("idle"), "{name}: {tasks} idle compactions");
    }
    // The dLSM configurations really read through their buffers (so the
    // differential check in every get compared something); LSbM buffers serve
    // only blocks cached before their file was drained, which these scattered
    // op logs rarely make (tests/lsbm.rs drives that path with hot reads).
    // Idle compaction empties the buffers whenever the policy rests, so they
    // live only while a flush's data drains (tests/idle_compaction.rs).
    for (name, hits) in buffer_hits {
        let buffered = name.starts_with("lsbm") || name.starts_with("dlsm");
        assert!(buffered || hits == 0, "{name}: {hits} buffer hits without a buffer");
        assert!(!name.starts_with("dlsm") || name.contains("idle") || hits > 0, "{name}: no buffer hits");
    }
}

/// The checker itself can fail: a write the database never saw is caught.
#[test]
#[should_panic(expected = "model mismatch")]
fn harness_detects_a_lost_write() {
    let mut ops = gen_ops(1, 200, 50);
    ops.push(Op::ModelOnlyPut(b"ghost".to_vec(), b"boo".to_vec()));
    ops.push(Op::Get(b"ghost".to_vec()));
    run_log(1, &ops, &configs()[0]);
}

/// Keyspaces under different policies in one database, with batches across
/// them, snapshot reads, reopens and drop/re-create, each matching its model.
#[test]
fn keyspaces_match_their_models() {
    for seed in 0..4 {
        run_keyspace_log(seed, 3000, 800);
    }
}
