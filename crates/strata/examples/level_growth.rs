//! Levels in use, level capacities and write amplification of `leveled` and
//! `garnering` (c = 0.8 and 0.4) as a tree of unique keys grows to 100 GiB,
//! on the metadata simulator (`compaction::simulate_growing`; no I/O).
//!
//! Run: `cargo run --release -p strata-db --example level_growth [-- MAX_GIB [RATIO [L1_MIB [FILE_MIB]]]]`
//!
//! The shape defaults to RocksDB's (64 MiB memtables and files, 256 MiB L1,
//! 7 levels); one modeled entry stands for 1 MiB of data so that 100 GiB is
//! ~100 k entries. Checkpoints are at 1, 2, 5, 10, ... GiB, plus 0.25 and 0.5
//! GiB for small shapes.

use strata::compaction::{
    simulate_growing, CompactionPolicy, GarneringPolicy, LeveledConfig, LeveledPolicy, SimConfig,
};

const MIB: u64 = 1 << 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let max_gib: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(100);
    let ratio: f64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(10.0);
    let l1_mib: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(256);
    let file_mib: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(64);
    let entry = MIB;
    let shape = LeveledConfig {
        num_levels: 7,
        l0_trigger: 4,
        max_bytes_for_level_base: l1_mib * MIB,
        multiplier: ratio,
        target_file_size: file_mib * MIB,
    };
    let mib = |m: u64| m * MIB / entry;
    let checkpoints: Vec<u64> =
        [256, 512, 1024, 2048, 5 << 10, 10 << 10, 20 << 10, 50 << 10, 100 << 10, 200 << 10]
            .into_iter()
            .filter(|m| *m < max_gib * 1024)
            .map(mib)
            .collect();
    let cfg = SimConfig {
        num_ops: mib(max_gib * 1024),
        key_space: u64::MAX,
        entry_size: entry,
        memtable_entries: file_mib,
        seed: 7,
        sequential: false,
        idle_every: 0,
    };
    let policies: Vec<(String, Box<dyn CompactionPolicy>)> = vec![
        ("leveled".into(), Box::new(LeveledPolicy::new(shape.clone())?)),
        ("garnering c=0.8".into(), Box::new(GarneringPolicy::new(shape.clone(), 0.8)?)),
        ("garnering c=0.4".into(), Box::new(GarneringPolicy::new(shape.clone(), 0.4)?)),
    ];
    println!("ratio {ratio}, L1 {l1_mib} MiB, {file_mib} MiB files and memtables, uniform unique keys");
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
