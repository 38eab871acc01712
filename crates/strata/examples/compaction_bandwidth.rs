//! Compaction bandwidth per pipeline mode (the pipelined-compaction paper's
//! main measurement): one database of overlapping L0 tables is built once,
//! then copied and compacted into one level by `compact_range` under each
//! mode, alternating modes over the repetitions.
//!
//! ```sh
//! cargo run --release -p strata-db --example compaction_bandwidth -- DIR [MB [COMPRESSION [direct [REPS [PATHS]]]]]
//! ```
//!
//! `SUBTASK_BYTES` in the environment sets `compaction_subtask_bytes` (default
//! 512 KiB) for the `c-ppcp` rows, and `VALUE_BYTES` the value size (default
//! 100; the paper's Fig. 8 sweeps 64 B to 1 KiB key-value pairs). `PATHS` (comma-separated directories) spreads the tables over data paths
//! (`Options::with_db_paths`): the database and each run get a `base` and a
//! `run` subdirectory in every one of them.
//!
//! Entries are 16-byte random keys with values (100 bytes by default) that compress to about
//! half (db_bench's `compression_ratio` 0.5). Bandwidth is input bytes / wall time.
//! Beside each mode's measured bandwidth, `model` is what the paper's
//! stage-bandwidth model (`strata::compaction::stage_model`) predicts for it
//! from the same repetition's sequential stage times (as the paper predicts
//! its speed-ups from its SCP profile), `own` what it gives from the mode's
//! own stage times (how near the run came to its slowest stage), and `err`
//! how far the measurement is from each. `merge s` is the merge stage the
//! model sees, `cpu s` the CPU every thread of the compaction used (the
//! model's cores bound is it over the cores).

use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata::compaction::stage_model::StageProfile;
use strata::{CompactionPipeline, CompressionType, Db, Options, WriteBatch};

fn base_options(compression: CompressionType, direct: bool, paths: &[PathBuf], sub: &str) -> Options {
    Options::default()
        .with_db_paths(paths.iter().map(|p| p.join(sub)))
        .with_compression(compression)
        .with_disable_auto_compactions(true)
        .with_write_buffer_size(64 << 20)
        .with_target_file_size_base(64 << 20)
        .with_use_direct_reads(direct)
        .with_level0_slowdown_writes_trigger(1000)
        .with_level0_stop_writes_trigger(1000)
}

fn build(
    dir: &Path,
    mb: u64,
    value_bytes: usize,
    compression: CompressionType,
    paths: &[PathBuf],
) -> strata::Result<()> {
    let db = Db::open(dir, base_options(compression, false, paths, "base"))?;
    let mut rng = SmallRng::seed_from_u64(7);
    let entries = mb * 1_000_000 / (16 + value_bytes as u64);
    // Four overlapping L0 tables (or more, if a memtable fills first).
    let per_table = entries / 4 + 1;
    let mut batch = WriteBatch::new();
    for i in 0..entries {
        let key: [u8; 16] = rng.gen();
        let mut value = vec![0u8; value_bytes];
        rng.fill(&mut value[..value_bytes / 2]);
        batch.put(key, &value);
        if batch.len() == 1000 {
            db.write(std::mem::take(&mut batch))?;
        }
        if (i + 1) % per_table == 0 {
            db.write(std::mem::take(&mut batch))?;
            db.flush()?;
        }
    }
    db.write(batch)?;
    db.flush()?;
    db.close()
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        std::fs::copy(e.path(), to.join(e.file_name()))?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir =
        Path::new(args.first().ok_or("usage: compaction_bandwidth DIR [MB [COMPRESSION [direct [REPS]]]]")?);
    let mb: u64 = args.get(1).map_or(Ok(256), |s| s.parse())?;
    let compression = CompressionType::parse(args.get(2).map_or("zstd", String::as_str))?;
    let direct = args.get(3).is_some_and(|s| s == "direct");
    let reps: usize = args.get(4).map_or(Ok(2), |s| s.parse())?;
    let subtask_bytes: usize = std::env::var("SUBTASK_BYTES").map_or(Ok(512 << 10), |s| s.parse())?;
    let value_bytes: usize = std::env::var("VALUE_BYTES").map_or(Ok(100), |s| s.parse())?;
    let paths: Vec<PathBuf> = args.get(5).map_or(Vec::new(), |s| s.split(',').map(PathBuf::from).collect());
    let base = dir.join("base");
    for d in std::iter::once(base.clone()).chain(paths.iter().map(|p| p.join("base"))) {
        if d.exists() {
            std::fs::remove_dir_all(&d)?;
        }
    }
    build(&base, mb, value_bytes, compression, &paths)?;
    let modes = [
        CompactionPipeline::Sequential,
        CompactionPipeline::Pipelined,
        CompactionPipeline::Parallel { compute_threads: 2 },
        CompactionPipeline::Auto { max_compute_threads: 2 },
    ];
    println!(
        "compression {compression:?}, {} reads, {mb} MB of entries (16 B keys, {value_bytes} B values) in L0, data paths {paths:?}, sub-tasks of {subtask_bytes} B",
        if direct { "direct" } else { "page-cache" }
    );
    println!(
        "{:<10} {:>4} {:>9} {:>9} {:>8} {:>8} {:>8} {:>6} {:>8} {:>6} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>10} {:>9} {:>8} {:>9}",
        "mode",
        "rep",
        "in MB",
        "out MB",
        "wall s",
        "MB/s",
        "model",
        "err",
        "own",
        "err",
        "compute s",
        "write s",
        "merge s",
        "cpu s",
        "wait s",
        "subtask s",
        "subwait s",
        "subtasks",
        "read s",
        "rdwait s"
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for rep in 0..reps {
        // The sequential run's stages, which the model predicts every mode from.
        let mut profile: Option<StageProfile> = None;
        for mode in modes {
            let run = dir.join("run");
            copy_dir(&base, &run)?;
            for p in &paths {
                copy_dir(&p.join("base"), &p.join("run"))?;
            }
            let opts = base_options(compression, direct, &paths, "run")
                .with_compaction_pipeline(mode)
                .with_compaction_subtask_bytes(subtask_bytes);
            let db = Db::open(&run, opts)?;
            let t = Instant::now();
            db.compact_range(None, None)?;
            let wall = t.elapsed().as_secs_f64();
            let s = db.stats();
            let st = s.compaction_stages;
            let measured = s.compaction_bytes_read as f64 / 1e6 / wall;
            let own_profile = StageProfile::measured(mode, s.compaction_time, &st, s.compaction_bytes_read);
            if mode == CompactionPipeline::Sequential {
                profile = Some(own_profile);
            }
            // Auto is modelled as the mode the model chooses from the sequential
            // profile (the engine chose from its own recent tasks).
            let model = profile.map_or(0.0, |p| p.bandwidth(mode, cores) / 1e6);
            let own = own_profile.bandwidth(mode, cores) / 1e6;
            println!(
                "{:<10} {:>4} {:>9.1} {:>9.1} {:>8.2} {:>8.1} {:>8.1} {:>5.0}% {:>8.1} {:>5.0}% {:>10.2} {:>10.2} {:>10.2} {:>8.2} {:>10.2} {:>10.2} {:>10.2} {:>9} {:>8.2} {:>9.2}",
                mode.name(),
                rep,
                s.compaction_bytes_read as f64 / 1e6,
                s.compaction_bytes_written as f64 / 1e6,
                wall,
                measured,
                model,
                (measured / model - 1.0) * 100.0,
                own,
                (measured / own - 1.0) * 100.0,
                st.compute.as_secs_f64(),
                st.write.as_secs_f64(),
                own_profile.merge,
                st.cpu.as_secs_f64(),
                st.merge_waiting.as_secs_f64(),
                st.subtask_merge.as_secs_f64(),
                st.subtask_waiting.as_secs_f64(),
                st.subtasks,
                st.read.as_secs_f64(),
                st.read_waiting.as_secs_f64(),
            );
            db.close()?;
        }
    }
    for d in std::iter::once(dir.join("run")).chain(paths.iter().map(|p| p.join("run"))) {
        std::fs::remove_dir_all(d)?;
    }
    Ok(())
}
