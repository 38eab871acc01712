//! Tests of `VersionSet`: apply, recover, rollover, failures.

use super::*;
use crate::filename::current_path;
use crate::key::{make_internal_key, ValueKind};
use crate::version::{NewFile, Version};
use crate::vfs::{FileLock, MemVfs, RandomAccessFile, RandomOpenOptions, SequentialFile, WritableFile};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::AtomicBool;

const DIR: &str = "/db";

fn nf(id: u64, lo: &str, hi: &str) -> NewFile {
    NewFile {
        id,
        size: 1000 + id,
        smallest: make_internal_key(lo.as_bytes(), id + 1, ValueKind::Put),
        largest: make_internal_key(hi.as_bytes(), id, ValueKind::Delete),
        num_entries: 10,
        num_deletions: 1,
        smallest_seq: id,
        largest_seq: id + 1,
        // Some files as older MANIFESTs recorded them, without bloom bits.
        bloom_bits_per_key: (!id.is_multiple_of(4)).then_some(id as f64 / 8.0),
        segments: Vec::new(),
        num_range_dels: id % 3,
    }
}

fn mem() -> Arc<MemVfs> {
    let vfs = Arc::new(MemVfs::new());
    vfs.create_dir_all(Path::new(DIR)).unwrap();
    vfs
}

/// Level -> [(run id, [file])], comparable across recoveries.
type Layout = Vec<Vec<(u64, Vec<NewFile>)>>;

fn layout(v: &Version) -> Layout {
    v.levels
        .iter()
        .map(|l| l.runs.iter().map(|r| (r.id, r.files.iter().map(|f| f.to_new_file()).collect())).collect())
        .collect()
}

fn add(vs: &VersionSet, level: usize, run: u64, f: NewFile) -> Result<Arc<Version>> {
    vs.log_and_apply(VersionEdit { new_files: vec![(level, run, f)], ..Default::default() })
}

/// A MemVfs whose file syncs (or file creations) fail while the flag is set.
#[derive(Debug, Default)]
struct FailingVfs {
    inner: MemVfs,
    fail_sync: Arc<AtomicBool>,
    fail_create: AtomicBool,
}

struct FailingFile(Box<dyn WritableFile>, Arc<AtomicBool>);

impl WritableFile for FailingFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.0.flush()
    }
    fn sync(&mut self) -> Result<()> {
        if self.1.load(Ordering::SeqCst) {
            return Err(Error::Io(std::io::Error::other("injected sync failure")));
        }
        self.0.sync()
    }
    fn len(&self) -> u64 {
        self.0.len()
    }
}

impl Vfs for FailingVfs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if self.fail_create.load(Ordering::SeqCst) {
            return Err(Error::Io(std::io::Error::other("injected create failure")));
        }
        Ok(Box::new(FailingFile(self.inner.create(path)?, self.fail_sync.clone())))
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.inner.open_sequential(path)
    }
    fn open_random(&self, path: &Path, opts: RandomOpenOptions) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_random(path, opts)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.inner.remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list_dir(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
    fn open_append_raw(&self, path: &Path) -> Result<(Box<dyn crate::vfs::RawFile>, u64)> {
        self.inner.open_append_raw(path)
    }
    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.inner.truncate(path, len)
    }
}

#[test]
fn create_apply_recover_keeps_everything() {
    let vfs = mem();
    let dir = Path::new(DIR);
    let vs = VersionSet::create(vfs.clone(), dir, 4).unwrap();
    assert_eq!(vs.manifest_number(), 1);
    assert_eq!(read_current(&*vfs, dir).unwrap(), 1);
    let (r0, f0, r1, f1, f2, wal) = (
        vs.new_file_number(),
        vs.new_file_number(),
        vs.new_file_number(),
        vs.new_file_number(),
        vs.new_file_number(),
        vs.new_file_number(),
    );
    vs.set_last_sequence(42);
    vs.log_and_apply(VersionEdit {
        log_number: Some(wal),
        new_files: vec![(0, r0, nf(f0, "a", "m")), (1, r1, nf(f1, "a", "c")), (1, r1, nf(f2, "d", "f"))],
        compact_pointers: vec![(1, b"c".to_vec())],
        policy_state: Some(b"blob".to_vec()),
        ..Default::default()
    })
    .unwrap();
    vs.log_and_apply(VersionEdit {
        deleted_files: vec![(0, r0, f0)],
        compact_pointers: vec![(2, b"q".to_vec()), (1, b"d".to_vec())],
        last_sequence: Some(50),
        ..Default::default()
    })
    .unwrap();
    vs.mark_file_number_used(100);
    assert_eq!(vs.new_file_number(), 101);
    let before = layout(&vs.current());
    assert_eq!(vs.last_sequence(), 50);
    assert_eq!(vs.live_files(), std::collections::HashSet::from([f1, f2]));
    let next = vs.new_file_number();
    // The counter is only persisted by the next apply.
    vs.log_and_apply(VersionEdit::default()).unwrap();
    drop(vs);

    let vs = VersionSet::recover(vfs.clone(), dir, 4).unwrap();
    assert_eq!(layout(&vs.current()), before);
    assert_eq!(vs.last_sequence(), 50);
    assert_eq!(vs.log_number(), wal);
    assert_eq!(vs.compact_pointers(), vec![None, Some(b"d".to_vec()), Some(b"q".to_vec()), None]);
    assert_eq!(vs.policy_state(), Some(b"blob".to_vec()));
    // Recovery wrote nothing; the first apply writes a fresh MANIFEST with
    // a number never handed out before.
    let recovered = vs.manifest_number();
    assert_eq!(read_current(&*vfs, dir).unwrap(), recovered);
    vs.log_and_apply(VersionEdit::default()).unwrap();
    assert!(vs.manifest_number() > next);
    assert_eq!(read_current(&*vfs, dir).unwrap(), vs.manifest_number());
    assert!(vs.new_file_number() > vs.manifest_number());
    vs.current().check_invariants().unwrap();
    // More levels than stored is fine; the new ones are empty.
    drop(vs);
    let vs = VersionSet::recover(vfs.clone(), dir, 6).unwrap();
    assert_eq!(vs.current().num_levels(), 6);
    assert_eq!(vs.compact_pointers().len(), 6);
    drop(vs);
    // Fewer levels than the tree uses is InvalidArgument; fewer than allocated but unused is fine.
    assert!(matches!(VersionSet::recover(vfs.clone(), dir, 1), Err(Error::InvalidArgument(_))));
    assert_eq!(VersionSet::recover(vfs, dir, 2).unwrap().current().level_files(1), 2);
}

#[test]
fn empty_policy_state_clears_it() {
    let vfs = mem();
    let vs = VersionSet::create(vfs.clone(), Path::new(DIR), 2).unwrap();
    vs.log_and_apply(VersionEdit { policy_state: Some(vec![1]), ..Default::default() }).unwrap();
    vs.log_and_apply(VersionEdit { policy_state: Some(vec![]), ..Default::default() }).unwrap();
    assert_eq!(vs.policy_state(), None);
    drop(vs);
    assert_eq!(VersionSet::recover(vfs, Path::new(DIR), 2).unwrap().policy_state(), None);
}

#[test]
fn rollover_keeps_state() {
    let vfs = mem();
    let dir = Path::new(DIR);
    let vs = VersionSet::create(vfs.clone(), dir, 3).unwrap();
    vs.set_max_manifest_size(300);
    let mut manifests = std::collections::HashSet::new();
    for i in 0..40u64 {
        let (run, id) = (vs.new_file_number(), vs.new_file_number());
        let k = format!("k{i:03}");
        vs.log_and_apply(VersionEdit {
            new_files: vec![(0, run, nf(id, &k, &k))],
            compact_pointers: vec![(2, k.into_bytes())],
            policy_state: Some(vec![i as u8]),
            ..Default::default()
        })
        .unwrap();
        manifests.insert(vs.manifest_number());
        // Everything CURRENT points at is durable: the MANIFEST's bytes and the
        // directory entries (new MANIFEST, CURRENT rename).
        let live = manifest_path(dir, vs.manifest_number());
        assert_eq!(vfs.synced_len(&live).unwrap(), vfs.file_size(&live).unwrap());
        assert!(vfs.unsynced_dir_ops(dir).is_empty());
    }
    assert!(manifests.len() > 3, "rolled over {} times", manifests.len() - 1);
    assert_eq!(read_current(&*vfs, dir).unwrap(), vs.manifest_number());
    let before = layout(&vs.current());
    drop(vs);
    let vs = VersionSet::recover(vfs, dir, 3).unwrap();
    assert_eq!(layout(&vs.current()), before);
    assert_eq!(vs.current().levels[0].runs.len(), 40);
    assert_eq!(vs.compact_pointers()[2], Some(b"k039".to_vec()));
    assert_eq!(vs.policy_state(), Some(vec![39]));
}

#[test]
fn torn_last_record_is_dropped_and_earlier_edits_kept() {
    let vfs = mem();
    let dir = Path::new(DIR);
    let vs = VersionSet::create(vfs.clone(), dir, 2).unwrap();
    let (r, a, b) = (vs.new_file_number(), vs.new_file_number(), vs.new_file_number());
    add(&vs, 1, r, nf(a, "a", "b")).unwrap();
    let kept = layout(&vs.current());
    add(&vs, 1, r, nf(b, "c", "d")).unwrap();
    let path = manifest_path(dir, vs.manifest_number());
    drop(vs);
    vfs.truncate(&path, vfs.file_size(&path).unwrap() - 3).unwrap();
    let vs = VersionSet::recover(vfs.clone(), dir, 2).unwrap();
    assert_eq!(layout(&vs.current()), kept);

    // Damage followed by intact records is not a torn tail: Corruption.
    add(&vs, 1, r, nf(b, "c", "d")).unwrap();
    let path = manifest_path(dir, vs.manifest_number());
    drop(vs);
    vfs.corrupt_byte(&path, 10, 0x40).unwrap();
    assert!(VersionSet::recover(vfs, dir, 2).unwrap_err().is_corruption());
}

#[test]
fn recovery_of_an_idle_tree_writes_nothing() {
    let vfs = mem();
    let dir = Path::new(DIR);
    let vs = VersionSet::create(vfs.clone(), dir, 2).unwrap();
    vs.mark_file_number_used(9);
    add(&vs, 1, 3, nf(4, "a", "c")).unwrap();
    drop(vs);
    let before = vfs.list_dir(dir).unwrap();
    let manifest = manifest_path(dir, read_current(&*vfs, dir).unwrap());
    let bytes = vfs.file_size(&manifest).unwrap();
    let vs = VersionSet::recover(vfs.clone(), dir, 2).unwrap();
    assert_eq!(vfs.list_dir(dir).unwrap(), before);
    assert_eq!(vfs.file_size(&manifest).unwrap(), bytes);
    // A torn last record is never appended to: the first apply starts a new MANIFEST.
    add(&vs, 1, 5, nf(6, "d", "f")).unwrap();
    assert_ne!(manifest_path(dir, vs.manifest_number()), manifest);
    assert_eq!(vfs.file_size(&manifest).unwrap(), bytes);
    drop(vs);
    assert_eq!(VersionSet::recover(vfs, dir, 2).unwrap().current().level_files(1), 2);
}

#[test]
fn version_set_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<VersionSet>();
    check::<Version>();
}

#[test]
fn bad_current_is_corruption() {
    let vfs = mem();
    let dir = Path::new(DIR);
    drop(VersionSet::create(vfs.clone(), dir, 2).unwrap());
    let write_current = |s: &[u8]| {
        let mut f = vfs.create(&current_path(dir)).unwrap();
        f.append(s).unwrap();
    };
    write_current(b"MANIFEST-000001");
    assert!(VersionSet::recover(vfs.clone(), dir, 2).unwrap_err().is_corruption());
    write_current(b"MANIFEST-000077\n");
    assert!(VersionSet::recover(vfs.clone(), dir, 2).unwrap_err().is_corruption());
    vfs.remove_file(&current_path(dir)).unwrap();
    assert!(VersionSet::recover(vfs.clone(), dir, 2).unwrap_err().is_corruption());
    write_current(b"MANIFEST-000001\n");
    VersionSet::recover(vfs.clone(), dir, 2).unwrap();
    // An empty MANIFEST, or one whose edit deletes a file that is not there.
    let path = manifest_path(dir, 500);
    drop(vfs.create(&path).unwrap());
    set_current(&*vfs, dir, 500).unwrap();
    assert!(VersionSet::recover(vfs.clone(), dir, 2).unwrap_err().is_corruption());
    let mut w = ManifestWriter::create(
        &*vfs,
        dir,
        501,
        &VersionEdit { next_file_number: Some(9), ..Default::default() },
    )
    .unwrap();
    w.append(&VersionEdit { deleted_files: vec![(1, 2, 3)], ..Default::default() }.encode()).unwrap();
    set_current(&*vfs, dir, 501).unwrap();
    assert!(VersionSet::recover(vfs.clone(), dir, 2).unwrap_err().is_corruption());
    // No next file number at all.
    drop(ManifestWriter::create(&*vfs, dir, 502, &VersionEdit::default()).unwrap());
    set_current(&*vfs, dir, 502).unwrap();
    assert!(VersionSet::recover(vfs, dir, 2).unwrap_err().is_corruption());
}

#[test]
fn deleted_file_is_queued_only_after_last_version_drops() {
    let vs = VersionSet::create(mem(), Path::new(DIR), 3).unwrap();
    let q = vs.obsolete_files();
    let (r1, a, r2, b) =
        (vs.new_file_number(), vs.new_file_number(), vs.new_file_number(), vs.new_file_number());
    add(&vs, 1, r1, nf(a, "a", "b")).unwrap();
    add(&vs, 2, r2, nf(b, "a", "b")).unwrap();
    let pinned = vs.current();
    let v = vs.log_and_apply(VersionEdit { deleted_files: vec![(1, r1, a)], ..Default::default() }).unwrap();
    assert!(!v.all_file_ids().contains(&a));
    assert!(q.take().is_empty(), "an old version still lists the file");
    drop(v);
    drop(pinned);
    assert_eq!(q.take(), vec![a]);
    drop(vs);
    assert!(q.take().is_empty(), "live files are never queued at shutdown");
}

#[test]
fn moved_or_shared_files_are_not_queued() {
    let vs = VersionSet::create(mem(), Path::new(DIR), 3).unwrap();
    let q = vs.obsolete_files();
    let (r1, r2, r3, f) =
        (vs.new_file_number(), vs.new_file_number(), vs.new_file_number(), vs.new_file_number());
    add(&vs, 1, r1, nf(f, "a", "b")).unwrap();
    let old = vs.current();
    // Trivial move L1 -> L2 in one edit.
    vs.log_and_apply(VersionEdit {
        deleted_files: vec![(1, r1, f)],
        new_files: vec![(2, r2, old.levels[1].runs[0].files[0].to_new_file())],
        ..Default::default()
    })
    .unwrap();
    let moved = vs.current();
    assert!(Arc::ptr_eq(&old.levels[1].runs[0].files[0], &moved.levels[2].runs[0].files[0]));
    drop(old);
    // Also listed in a second run, then dropped from one of them.
    add(&vs, 1, r3, nf(f, "a", "b")).unwrap();
    vs.log_and_apply(VersionEdit { deleted_files: vec![(2, r2, f)], ..Default::default() }).unwrap();
    drop(moved);
    assert!(q.take().is_empty());
    assert_eq!(vs.live_files(), std::collections::HashSet::from([f]));
    vs.log_and_apply(VersionEdit { deleted_files: vec![(1, r3, f)], ..Default::default() }).unwrap();
    assert_eq!(q.take(), vec![f]);
}

#[test]
fn invalid_edits_change_nothing() {
    let vfs = mem();
    let dir = Path::new(DIR);
    let vs = VersionSet::create(vfs.clone(), dir, 3).unwrap();
    let (r, a, b) = (vs.new_file_number(), vs.new_file_number(), vs.new_file_number());
    add(&vs, 1, r, nf(a, "a", "c")).unwrap();
    let before = layout(&vs.current());
    let invalid = |res: Result<Arc<Version>>| matches!(res, Err(Error::InvalidArgument(_)));
    assert!(invalid(add(&vs, 1, r, nf(b, "c", "d"))), "overlapping files in a run");
    assert!(invalid(add(&vs, 3, r, nf(b, "x", "y"))), "level out of range");
    assert!(invalid(add(&vs, 1, 999, nf(b, "x", "y"))), "run id never allocated");
    assert!(invalid(add(&vs, 2, r, nf(999, "x", "y"))), "file id never allocated");
    assert!(invalid(vs.log_and_apply(VersionEdit { log_number: Some(999), ..Default::default() })));
    assert!(invalid(
        vs.log_and_apply(VersionEdit { compact_pointers: vec![(3, vec![])], ..Default::default() })
    ));
    assert!(invalid(vs.log_and_apply(VersionEdit { deleted_files: vec![(1, r, b)], ..Default::default() })));
    vs.log_and_apply(VersionEdit { log_number: Some(a), ..Default::default() }).unwrap();
    assert!(
        invalid(vs.log_and_apply(VersionEdit { log_number: Some(r), ..Default::default() })),
        "backwards"
    );
    assert_eq!(layout(&vs.current()), before);
    add(&vs, 1, r, nf(b, "d", "e")).unwrap();
    drop(vs);
    assert_eq!(VersionSet::recover(vfs, dir, 3).unwrap().current().level_files(1), 2);
    assert!(matches!(VersionSet::create(mem(), dir, 0), Err(Error::InvalidArgument(_))));
}

#[test]
fn failed_manifest_sync_stops_all_later_applies() {
    let failing = Arc::new(FailingVfs::default());
    let fail = failing.fail_sync.clone();
    failing.create_dir_all(Path::new(DIR)).unwrap();
    let vs = VersionSet::create(failing, Path::new(DIR), 2).unwrap();
    let (r, a) = (vs.new_file_number(), vs.new_file_number());
    fail.store(true, Ordering::SeqCst);
    assert!(matches!(add(&vs, 1, r, nf(a, "a", "b")), Err(Error::Io(_))));
    assert!(vs.current().all_file_ids().is_empty(), "nothing published");
    fail.store(false, Ordering::SeqCst);
    assert!(matches!(add(&vs, 1, r, nf(a, "a", "b")), Err(Error::ReadOnly(_))));
    assert!(matches!(vs.log_and_apply(VersionEdit::default()), Err(Error::ReadOnly(_))));
}

#[test]
fn failed_rollover_publishes_then_stops() {
    let failing = Arc::new(FailingVfs::default());
    let vfs: Arc<dyn Vfs> = failing.clone();
    let dir = Path::new(DIR);
    vfs.create_dir_all(dir).unwrap();
    let vs = VersionSet::create(vfs.clone(), dir, 2).unwrap();
    let (r, a) = (vs.new_file_number(), vs.new_file_number());
    vs.set_max_manifest_size(1);
    // The append to the open MANIFEST succeeds; creating the next one fails.
    failing.fail_create.store(true, Ordering::SeqCst);
    let v = add(&vs, 1, r, nf(a, "a", "b")).unwrap();
    assert!(v.all_file_ids().contains(&a));
    assert!(vs.current().all_file_ids().contains(&a));
    failing.fail_create.store(false, Ordering::SeqCst);
    assert!(matches!(vs.log_and_apply(VersionEdit::default()), Err(Error::ReadOnly(_))));
    drop(vs);
    // The edit is durable in the old MANIFEST, which CURRENT still names.
    assert!(VersionSet::recover(vfs, dir, 2).unwrap().live_files().contains(&a));
}

#[test]
fn random_edits_survive_recovery() {
    let mut rng = SmallRng::seed_from_u64(3);
    let vfs = mem();
    let dir = Path::new(DIR);
    let mut vs = VersionSet::create(vfs.clone(), dir, 4).unwrap();
    vs.set_max_manifest_size(2000);
    for step in 0..150 {
        let v = vs.current();
        let mut edit = VersionEdit::default();
        // Delete a few random files from random runs.
        for (l, level) in v.levels.iter().enumerate() {
            for run in &level.runs {
                for f in &run.files {
                    if rng.gen_bool(0.1) {
                        edit.deleted_files.push((l, run.id, f.id));
                    }
                }
            }
        }
        // Add a new run of disjoint files, sometimes re-listing a live file elsewhere.
        let l = rng.gen_range(0..4);
        let run = vs.new_file_number();
        let mut k = rng.gen_range(0..50u32) * 10;
        for _ in 0..rng.gen_range(1..4) {
            let id = vs.new_file_number();
            edit.new_files.push((l, run, nf(id, &format!("{k:04}"), &format!("{:04}", k + 5))));
            k += 10;
        }
        if let Some(f) = v.levels.iter().flat_map(|l| &l.runs).flat_map(|r| &r.files).next() {
            edit.new_files.push((rng.gen_range(0..4), vs.new_file_number(), f.to_new_file()));
        }
        vs.log_and_apply(edit).unwrap().check_invariants().unwrap();
        if step % 50 == 49 {
            let before = layout(&vs.current());
            drop(vs);
            vs = VersionSet::recover(vfs.clone(), dir, 4).unwrap();
            vs.set_max_manifest_size(2000);
            assert_eq!(layout(&vs.current()), before);
        }
    }
}
