//! Several merges at once (`Options::with_max_background_compactions`): they
//! really overlap, and the database keeps every answer of a model.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::{CompactionStyle, CompressionType, Db, MemVfs, Options};

fn options(style: CompactionStyle, merges: usize) -> Options {
    Options::default()
        .with_vfs(Arc::new(MemVfs::new()))
        .with_compaction_style(style)
        .with_max_background_compactions(merges)
        // Slow merges (zstd at a high level) over many small files, so that
        // a second pick happens while the first merge runs.
        .with_compression(CompressionType::Zstd(19))
        .with_write_buffer_size(64 << 10)
        .with_target_file_size_base(16 << 10)
        .with_max_bytes_for_level_base(64 << 10)
        .with_max_bytes_for_level_multiplier(4.0)
        .with_level0_file_num_compaction_trigger(2)
        .with_block_size(1024)
}

fn load(db: &Db, seed: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut model = BTreeMap::new();
    for i in 0..60_000u32 {
        let k = format!("key{:06}", rng.gen_range(0..40_000)).into_bytes();
        if rng.gen_ratio(1, 10) {
            db.delete(&k).expect("delete");
            model.remove(&k);
        } else {
            // Random bytes: data compression cannot shrink away.
            let mut v = format!("{i}-").into_bytes();
            v.extend((0..rng.gen_range(20..120)).map(|_| rng.gen_range(b'a'..=b'z')));
            db.put(&k, &v).expect("put");
            model.insert(k, v);
        }
    }
    db.wait_for_compactions().expect("wait");
    model
}

#[test]
fn merges_run_side_by_side_and_answers_match_the_model() {
    for style in [CompactionStyle::Leveled, CompactionStyle::Garnering { c: 0.8 }] {
        let db = Db::open("/db", options(style.clone(), 3)).expect("open");
        let model = load(&db, 7);
        let got: Vec<(Vec<u8>, Vec<u8>)> =
            db.iter().map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).expect("iterate")).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
        assert!(got == want, "{}: {} entries, model {}", style.name(), got.len(), want.len());
        let s = db.stats();
        eprintln!(
            "{}: peak {} merges at once, {} merges",
            style.name(),
            s.peak_running_compactions,
            s.compactions
        );
        assert!(s.peak_running_compactions >= 2, "{}: merges never overlapped", style.name());
        assert!(s.levels.iter().skip(1).all(|l| l.runs <= 1), "{}: a level holds two runs", style.name());
    }
}

#[test]
fn policies_without_concurrent_picks_keep_one_merge() {
    let db = Db::open("/db", options(CompactionStyle::Blsm, 3)).expect("open");
    load(&db, 8);
    let s = db.stats();
    assert!(s.compactions > 0, "{s}");
    assert_eq!(s.peak_running_compactions, 1);
}

#[test]
fn invalid_merge_counts_are_refused() {
    for n in [0, 17] {
        let Err(e) = Db::open("/db", options(CompactionStyle::Leveled, n)) else { panic!("{n} accepted") };
        assert!(e.to_string().contains("max_background_compactions"), "{e}");
    }
}
