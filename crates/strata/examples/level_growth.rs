//! Levels in use, level capacities and write amplification of `leveled` and
//! `garnering` (c = 0.8 and 0.4) as a tree of unique keys grows to 100 GiB,
//! on the metadata simulator (`compaction::simulate_growing`; no I/O).
//!
//! Run: `cargo run --release -p strata --example level_growth [-- MAX_GIB [RATIO]]`
//!
//! The shape is RocksDB's defaults (64 MiB memtables and files, 256 MiB L1,
//! 7 levels); one modeled entry stands for 1 MiB of data so that 100 GiB is
//! ~100 k entries.

use strata::compaction::{
    simulate_growing, CompactionPolicy, GarneringPolicy, LeveledConfig, LeveledPolicy, SimConfig,
};

const MIB: u64 = 1 << 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let max_gib: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(100);
    let ratio: f64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(10.0);
    let entry = MIB;
    let shape = LeveledConfig {
        num_levels: 7,
        l0_trigger: 4,
        max_bytes_for_level_base: 256 * MIB,
        multiplier: ratio,
        target_file_size: 64 * MIB,
    };
    let gib = |g: u64| g * 1024 * MIB / entry;
    let checkpoints: Vec<u64> =
        [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000].into_iter().filter(|g| *g < max_gib).map(gib).collect();
    let cfg = SimConfig {
        num_ops: gib(max_gib),
        key_space: u64::MAX,
        entry_size: entry,
        memtable_entries: 64,
        seed: 7,
        sequential: false,
    };
    let policies: Vec<(String, Box<dyn CompactionPolicy>)> = vec![
        ("leveled".into(), Box::new(LeveledPolicy::new(shape.clone())?)),
        ("garnering c=0.8".into(), Box::new(GarneringPolicy::new(shape.clone(), 0.8)?)),
        ("garnering c=0.4".into(), Box::new(GarneringPolicy::new(shape.clone(), 0.4)?)),
    ];
    println!("ratio {ratio}, L1 256 MiB, 64 MiB files and memtables, uniform unique keys");
    println!(
        "{:<16} {:>8} {:>7} {:>7}  capacities L1.. (GiB), * = level holds data",
        "policy", "data GiB", "levels", "w-amp"
    );
    for (name, policy) in &policies {
        for r in simulate_growing(policy.as_ref(), &cfg, &checkpoints)? {
            let caps: Vec<String> = r.levels[1..=r.levels_in_use.max(1)]
                .iter()
                .map(|l| {
                    let cap = l.target_bytes.unwrap_or(0) as f64 / (1u64 << 30) as f64;
                    format!("{cap:.2}{}", if l.bytes > 0 { "*" } else { "" })
                })
                .collect();
            println!(
                "{:<16} {:>8.1} {:>7} {:>7.2}  {}",
                name,
                r.user_bytes as f64 / (1u64 << 30) as f64,
                r.levels_in_use,
                r.write_amplification,
                caps.join(" ")
            );
        }
    }
    Ok(())
}
