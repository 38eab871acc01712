use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::text::{escape, unescape};
use super::*;
use crate::compaction::leveled::{LeveledConfig, LeveledPolicy};
use crate::compaction::style::CompactionStyle;
use crate::compaction::Decision;
use crate::options::kinds::{BloomAllocation, CompactionPipeline, CompressionType, WalRecoveryMode};
use crate::prefix::FixedPrefix;
use crate::vfs::MemVfs;
use crate::KeyspaceOptions;

/// Every option `Options` can persist, at a value other than its default.
fn everything_set() -> Options {
    let add = crate::associative_merge_operator("add", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    let drop_all = |_l: usize, _k: &[u8], _v: &[u8]| Decision::Remove;
    Options::default()
        .with_block_cache_capacity(7 << 20)
        .with_row_cache(3 << 20)
        .with_max_open_files(77)
        .with_delayed_write_rate(4 << 20)
        .with_use_direct_reads(true) // excludes mmap_reads: that one has its own test
        .with_max_mapped_files(12)
        .with_compaction_readahead_size(12345)
        .with_compaction_pipeline(CompactionPipeline::Parallel { compute_threads: 3 })
        .with_max_background_compactions(2)
        .with_max_background_jobs(5)
        .with_compaction_subtask_bytes(999)
        .with_compaction_warmup(true)
        .with_paranoid_checks(false)
        .with_paranoid_file_checks(true)
        .with_avoid_flush_during_shutdown(true)
        .with_wal_recovery_mode(WalRecoveryMode::PointInTimeRecovery)
        .with_max_manifest_file_size(5 << 20)
        .with_max_total_wal_size(9 << 20)
        .with_info_log(false)
        .with_max_log_file_size(1 << 20)
        .with_keep_log_file_num(2)
        .with_db_paths(["/fast disk/ ", "/slow\\disk\nx"])
        .with_compaction_style(CompactionStyle::Garnering { c: 0.3 })
        .with_write_buffer_size(123_456)
        .with_max_write_buffer_number(5)
        .with_level0_file_num_compaction_trigger(3)
        .with_level0_slowdown_writes_trigger(9)
        .with_level0_stop_writes_trigger(11)
        .with_max_bytes_for_level_base(1 << 22)
        .with_max_bytes_for_level_multiplier(7.25)
        .with_num_levels(5)
        .with_target_file_size_base(1 << 21)
        .with_block_size(8192)
        .with_block_restart_interval(8)
        .with_bloom_bits_per_key(0.1 + 0.2)
        .with_bloom_allocation(BloomAllocation::Monkey)
        .with_whole_key_filtering(false)
        .with_compression(CompressionType::Zstd(7))
        .with_disable_auto_compactions(true)
        .with_buffer_trim_interval(Duration::from_nanos(1_234_567_891))
        .with_buffer_trim_threshold(0.25)
        .with_buffer_read_misses(true)
        .with_buffer_last_level(true)
        .with_seek_compaction(true)
        .with_max_mem_compaction_level(2)
        .with_merge_operator(add)
        .with_compaction_filter(Arc::new(drop_all))
        .with_prefix_extractor(Arc::new(FixedPrefix::new(3)))
}

fn mem() -> (Arc<MemVfs>, &'static Path) {
    let vfs = Arc::new(MemVfs::new());
    vfs.create_dir_all(Path::new("/db")).unwrap();
    (vfs, Path::new("/db"))
}

#[test]
fn every_option_survives_write_parse_load() {
    let (vfs, dir) = mem();
    let src = everything_set().with_vfs(vfs.clone());
    let ks = KeyspaceOptions::default()
        .with_compaction_style(CompactionStyle::Lwc { max_segments: 3 })
        .with_write_buffer_size(77_777)
        .with_compression(CompressionType::None)
        .with_bloom_bits_per_key(3.5);
    let ks_tree = ks.apply(&src);
    let trees =
        vec![("default".to_string(), src.clone()), ("we\"ird \\ name\n ".to_string(), ks_tree.clone())];
    write(vfs.as_ref(), dir, &trees).unwrap();
    let given = Options::default()
        .with_vfs(vfs.clone())
        .with_merge_operator(src.merge_operator.clone().unwrap())
        .with_compaction_filter(src.compaction_filter.clone().unwrap());
    let loaded = Options::load_latest_with(dir, &given).unwrap();
    // The text covers every persisted field: equal texts, equal options.
    assert_eq!(render(&[("default".into(), loaded.clone())]), render(&trees[..1]));
    assert_eq!(loaded.bloom_bits_per_key, 0.1 + 0.2, "floats are exact");
    assert_eq!(loaded.buffer_trim_interval, Duration::from_nanos(1_234_567_891));
    assert_eq!(loaded.db_paths, src.db_paths);
    assert_eq!(loaded.max_background_jobs, 5);
    assert_eq!(
        loaded.prefix_extractor.as_ref().map(|p| p.name().to_string()).as_deref(),
        Some("strata.FixedPrefix.3")
    );
    assert!(matches!(loaded.compaction_pipeline, CompactionPipeline::Parallel { compute_threads: 3 }));
    assert_eq!(loaded.keyspaces.len(), 1);
    let (name, back) = &loaded.keyspaces[0];
    assert_eq!(name, &trees[1].0);
    assert_eq!(back.encode(), ks.encode());
    let back_tree = back.apply(&loaded);
    assert_eq!(
        render(&[("x".into(), back_tree)]).split("[Keyspace").nth(1),
        render(&[("x".into(), ks_tree)]).split("[Keyspace").nth(1)
    );
}

#[test]
fn mmap_reads_round_trips_and_an_older_file_loads_the_default() {
    let (vfs, dir) = mem();
    let src = Options::default().with_vfs(vfs.clone()).with_mmap_reads(true).with_max_mapped_files(3);
    write(vfs.as_ref(), dir, &[("default".into(), src)]).unwrap();
    let base = Options::default().with_vfs(vfs.clone());
    let loaded = Options::load_latest_with(dir, &base).unwrap();
    assert!(loaded.mmap_reads);
    assert_eq!(loaded.max_mapped_files, 3);
    // A file written before the options existed: the defaults.
    let text = render(&[("default".into(), Options::default().with_mmap_reads(true))]);
    assert!(text.contains("mmap_reads=true\n"));
    let old: String = text
        .lines()
        .filter(|l| !l.contains("mapped_files") && !l.contains("mmap"))
        .collect::<Vec<_>>()
        .join("\n");
    let (vfs, dir) = mem();
    let mut f = vfs.create(&dir.join("OPTIONS-000001")).unwrap();
    f.append(reseal(&format!("{old}\n")).as_bytes()).unwrap();
    f.sync().unwrap();
    let loaded = Options::load_latest_with(dir, &Options::default().with_vfs(vfs.clone())).unwrap();
    assert!(!loaded.mmap_reads);
    assert_eq!(loaded.max_mapped_files, 1000);
    // The two read paths exclude each other.
    assert!(Options::default().with_mmap_reads(true).with_use_direct_reads(true).validate().is_err());
}

#[test]
fn missing_custom_policy_or_merge_operator_is_named() {
    let (vfs, dir) = mem();
    let policy = Arc::new(LeveledPolicy::new(LeveledConfig::default()).unwrap());
    let src = Options::default().with_compaction_style(CompactionStyle::Custom(policy.clone()));
    write(vfs.as_ref(), dir, &[("default".into(), src)]).unwrap();
    let base = Options::default().with_vfs(vfs.clone());
    let err = Options::load_latest_with(dir, &base).unwrap_err().to_string();
    assert!(err.contains("custom compaction policy \"leveled\"") && err.contains("OPTIONS-000001"), "{err}");
    let loaded =
        Options::load_latest_with(dir, &base.clone().with_compaction_style(CompactionStyle::Custom(policy)))
            .unwrap();
    assert!(matches!(loaded.compaction_style, CompactionStyle::Custom(_)));

    let add = crate::associative_merge_operator("add", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    let other = crate::associative_merge_operator("other", |_k, _e, o| Some(o.to_vec()));
    write(vfs.as_ref(), dir, &[("default".into(), Options::default().with_merge_operator(add.clone()))])
        .unwrap();
    let err = Options::load_latest_with(dir, &base).unwrap_err().to_string();
    assert!(err.contains("merge operator \"add\""), "{err}");
    let err =
        Options::load_latest_with(dir, &base.clone().with_merge_operator(other)).unwrap_err().to_string();
    assert!(err.contains("\"add\"") && err.contains("\"other\""), "{err}");
    assert!(Options::load_latest_with(dir, &base.with_merge_operator(add)).unwrap().merge_operator.is_some());
}

#[test]
fn newest_two_are_kept_and_temps_removed() {
    let (vfs, dir) = mem();
    let trees = [("default".to_string(), Options::default())];
    vfs.create(&dir.join("OPTIONS-000009.dbtmp")).unwrap();
    for _ in 0..4 {
        write(vfs.as_ref(), dir, &trees).unwrap();
    }
    let mut names = vfs.list_dir(dir).unwrap();
    names.sort();
    assert_eq!(names, ["OPTIONS-000003", "OPTIONS-000004"]);
    assert_eq!(newest(vfs.as_ref(), dir).unwrap(), Some(dir.join("OPTIONS-000004")));
}

fn check_text(text: &str) -> Result<()> {
    let (vfs, dir) = mem();
    let mut f = vfs.create(&dir.join("OPTIONS-000001")).unwrap();
    f.append(text.as_bytes()).unwrap();
    f.sync().unwrap();
    check_at_open(vfs.as_ref(), dir)
}

/// `text` with its checksum line recomputed (a file as a newer build writes it).
fn reseal(text: &str) -> String {
    let body = &text[..text.rfind(text::CHECKSUM_PREFIX).unwrap()];
    format!("{body}{}{:08x}\n", text::CHECKSUM_PREFIX, crc32c::crc32c(body.as_bytes()))
}

#[test]
fn open_check_refuses_newer_formats_and_other_comparators() {
    let good = render(&[("default".into(), Options::default())]);
    check_text(&good).unwrap();
    // Only a file that passes its checksum refuses: the same text unsealed is damage.
    let (vfs, dir) = mem();
    let other = good.replace(COMPARATOR, "x");
    let unsealed = other[..other.rfind(text::CHECKSUM_PREFIX).unwrap()].to_string();
    for (i, text) in [other, unsealed].into_iter().enumerate() {
        let _ = vfs.remove_file(&dir.join("OPTIONS-000001"));
        let mut f = vfs.create(&dir.join("OPTIONS-000001")).unwrap();
        f.append(text.as_bytes()).unwrap();
        drop(f);
        check_at_open(vfs.as_ref(), dir).unwrap_or_else(|e| panic!("case {i}: {e}"));
        assert!(Options::load_latest_with(dir, &Options::default().with_vfs(vfs.clone()))
            .unwrap_err()
            .is_corruption());
    }
    let good = reseal(&good);
    let newer = reseal(&good.replace("options_file_version=1", "options_file_version=2"));
    let err = check_text(&newer).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("OPTIONS-000001") && err.to_string().contains("options_file_version=2"));
    let newer = reseal(&good.replace("table_format=1", "table_format=9"));
    assert!(check_text(&newer).unwrap_err().to_string().contains("table_format=9"));
    let other = reseal(&good.replace(COMPARATOR, "rocksdb.ReverseBytewiseComparator"));
    let err = check_text(&other).unwrap_err();
    assert!(err.to_string().contains("comparator=rocksdb.ReverseBytewiseComparator"), "{err}");
}

#[test]
fn unknown_keys_and_damaged_files_do_not_stop_an_open() {
    let good = render(&[("default".into(), Options::default())]);
    check_text(&reseal(&good.replace("[DBOptions]\n", "[DBOptions]\nfuture_option=42\n"))).unwrap();
    let body = &good[..good.rfind(text::CHECKSUM_PREFIX).unwrap()];
    check_text(&reseal(&format!("{body}[FutureSection]\nx=y\n\n{}", text::CHECKSUM_PREFIX))).unwrap();
    for damaged in
        ["garbage without equals", "[Version\n", "\u{0}\u{1}", "", "[Version]\noptions_file_version=x"]
    {
        check_text(damaged).unwrap();
    }
    let (vfs, dir) = mem();
    let mut f = vfs.create(&dir.join("OPTIONS-000001")).unwrap();
    f.append(&[0xff, 0xfe]).unwrap();
    drop(f);
    check_at_open(vfs.as_ref(), dir).unwrap();
    assert!(Options::load_latest_with(dir, &Options::default().with_vfs(vfs)).unwrap_err().is_corruption());
}

#[test]
fn no_options_file_is_not_a_database_error() {
    let (vfs, dir) = mem();
    let err = Options::load_latest_with(dir, &Options::default().with_vfs(vfs)).unwrap_err();
    assert!(matches!(err, Error::NotADatabase(_)), "{err}");
}

#[test]
fn escapes_round_trip() {
    for s in ["", " a ", "a\\b", "x\ny\r\tz", "q\"uote", "  "] {
        assert_eq!(unescape(&escape(s)).as_deref(), Some(s), "{s:?}");
        assert_eq!(escape(s).trim(), escape(s), "{s:?}");
    }
    assert_eq!(unescape("bad\\q"), None);
    assert_eq!(parse_name("OPTIONS-000012"), Some(12));
    assert_eq!(parse_name("OPTIONS-"), None);
    assert!(is_options_file("OPTIONS-000012.dbtmp") && !is_options_file("OPTIONS-x"));
}
