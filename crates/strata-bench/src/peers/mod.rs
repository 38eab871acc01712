//! Peer engines (RocksDB, LevelDB, fjall), each behind its own cargo feature
//! so the default build needs none of them. Every peer maps the
//! [`crate::engine::EngineConfig`] onto its own options and prints the mapping.

#[cfg(feature = "fjall")]
pub mod fjall;
#[cfg(feature = "leveldb")]
pub mod leveldb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;

/// The benchmark's `--compression_type`, normalised (`none`, `lz4`, `zstd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// No compression.
    None,
    /// LZ4.
    Lz4,
    /// Zstandard at its default level (3), as Strata's `zstd`.
    Zstd,
}

impl Codec {
    /// Parses `--compression_type` the way Strata does (`no` = `none`,
    /// `zstd:N` is refused for peers since levels are not mapped).
    pub fn parse(s: &str) -> Result<Codec, String> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "no" => Ok(Codec::None),
            "lz4" => Ok(Codec::Lz4),
            "zstd" => Ok(Codec::Zstd),
            other => {
                Err(format!("compression_type {other:?} cannot be mapped onto peers (use none, lz4 or zstd)"))
            }
        }
    }
}

/// Reads the counter `name` from a RocksDB-style statistics dump, where
/// lines look like `rocksdb.block.cache.hit COUNT : 42`.
pub fn parse_ticker(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix(" COUNT : ")?;
        rest.trim().parse().ok()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn codec_parses_like_strata() {
        assert_eq!(Codec::parse("NO"), Ok(Codec::None));
        assert_eq!(Codec::parse("lz4"), Ok(Codec::Lz4));
        assert_eq!(Codec::parse("zstd"), Ok(Codec::Zstd));
        assert!(Codec::parse("snappy").is_err());
    }

    #[test]
    fn ticker_parsing_matches_exact_names() {
        let text = "rocksdb.block.cache.miss COUNT : 7\nrocksdb.block.cache.hit COUNT : 42\n\
                    rocksdb.block.cache.hit.extra COUNT : 1\n";
        assert_eq!(parse_ticker(text, "rocksdb.block.cache.hit"), Some(42));
        assert_eq!(parse_ticker(text, "rocksdb.block.cache.miss"), Some(7));
        assert_eq!(parse_ticker(text, "rocksdb.flush.write.bytes"), None);
    }

    /// Settings small enough that a few thousand puts flush and compact.
    #[allow(dead_code)]
    fn tiny_config(dir: &std::path::Path) -> crate::engine::EngineConfig {
        crate::engine::EngineConfig {
            max_file_size: 64 << 10,
            compression: "lz4".into(),
            // Prefixes of 100 keys (RocksDB's extractor; the others scan ranges).
            prefix_size: 14,
            ..crate::engine::EngineConfig::small(dir.join("db"))
        }
    }

    /// Drives one peer through every trait method and checks the answers.
    #[allow(dead_code)]
    fn exercise(kind: &str, expect_cache_counters: bool) {
        let dir = tempfile::tempdir().unwrap();
        let cfg = tiny_config(dir.path());
        let db = crate::registry::open_engine(kind, &cfg).unwrap();
        assert_eq!(db.name(), kind);
        assert!(!db.option_mapping().is_empty());
        let value = [7u8; 100];
        for i in 0..5000u32 {
            db.put(format!("{i:016}").as_bytes(), &value).unwrap();
        }
        db.delete(format!("{:016}", 10).as_bytes()).unwrap();
        db.flush().unwrap();
        assert_eq!(db.get(format!("{:016}", 42).as_bytes()).unwrap().as_deref(), Some(&value[..]));
        assert_eq!(db.get(format!("{:016}", 10).as_bytes()).unwrap(), None);
        assert_eq!(db.get(b"missing").unwrap(), None);
        // Seek lands on 9 (10 is deleted), then 11, 12, ...
        assert_eq!(db.scan(format!("{:016}", 9).as_bytes(), 3).unwrap(), (3, 3 * 116));
        let mut last = Vec::new();
        assert_eq!(
            db.scan_keep_last(format!("{:016}", 9).as_bytes(), None, 3, Some(&mut last)).unwrap(),
            (3, 348)
        );
        assert_eq!(last, format!("{:016}", 12).into_bytes());
        // An upper bound stops the scan before 12 whatever the count.
        let (from, to) = (format!("{:016}", 9), format!("{:016}", 12));
        assert_eq!(db.scan_bounded(from.as_bytes(), to.as_bytes(), 10).unwrap(), (2, 2 * 116));
        assert_eq!(db.scan(format!("{:016}", 4998).as_bytes(), 10).unwrap(), (2, 2 * 116));
        // Whole prefixes: 4200..=4299, 0..=99 without the deleted 10, and a
        // prefix shorter than the extractor's (a range scan): 0..=999 without 10.
        assert_eq!(db.scan_prefix(b"00000000000042").unwrap(), (100, 100 * 116));
        assert_eq!(db.scan_prefix(b"00000000000000").unwrap(), (99, 99 * 116));
        assert_eq!(db.scan_prefix(b"0000000000000").unwrap(), (999, 999 * 116));
        assert_eq!(db.scan_prefix(b"00000000000099").unwrap(), (0, 0));
        // Batches (the engine's multi-get or a loop of gets) and pinned reads.
        let mut keys: Vec<Vec<u8>> =
            [42, 10, 4999, 42].iter().map(|i| format!("{i:016}").into_bytes()).collect();
        keys.push(b"missing".to_vec());
        for pinned in [false, true] {
            assert_eq!(db.multi_get(&keys, pinned).unwrap(), (3, 3 * 116), "pinned {pinned}");
        }
        assert_eq!(db.multi_get(&[], false).unwrap(), (0, 0));
        assert_eq!(db.get_pinned(format!("{:016}", 42).as_bytes()).unwrap(), Some(100));
        assert_eq!(db.get_pinned(format!("{:016}", 10).as_bytes()).unwrap(), None);
        for i in 0..5000u32 {
            db.get(format!("{i:016}").as_bytes()).unwrap();
        }
        let st = db.stats();
        if expect_cache_counters {
            let (h, m) = (st.cache_hits.unwrap(), st.cache_misses.unwrap());
            assert!(h > 0 && m > 0, "hits {h} misses {m}");
        } else {
            assert_eq!(st.hit_ratio(), None);
        }
        assert!(crate::engine::dir_size(db.path()) > 0);
        drop(db);
        // Reopens on the same files.
        let db = crate::registry::open_engine(kind, &cfg).unwrap();
        assert_eq!(db.get(format!("{:016}", 4999).as_bytes()).unwrap().as_deref(), Some(&value[..]));
    }

    #[cfg(feature = "rocksdb")]
    #[test]
    fn rocksdb_round_trip() {
        exercise("rocksdb", true);
    }

    #[cfg(feature = "leveldb")]
    #[test]
    fn leveldb_round_trip() {
        exercise("leveldb", false);
    }

    #[cfg(feature = "fjall")]
    #[test]
    fn fjall_round_trip() {
        exercise("fjall", false);
    }
}
