//! Obsolete tables are gone when the call that made them obsolete returns,
//! even while another thread is still deleting them.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::hook_vfs::HookVfs;
use parking_lot::{Condvar, Mutex};
use strata::{Db, MemVfs, Options, Vfs};

/// A gate on table deletions: while closed, `remove_file` of a table blocks
/// (after saying so) until the gate opens.
#[derive(Default)]
struct Gate {
    state: Mutex<(bool, usize)>, // (closed, deletions blocked now)
    cv: Condvar,
}

impl Gate {
    /// Blocks a table's removal while the gate is closed, after counting it.
    fn pass(&self, path: &Path) {
        if path.extension().is_some_and(|e| e == "sst") {
            let mut st = self.state.lock();
            if st.0 {
                st.1 += 1;
                self.cv.notify_all();
                while st.0 {
                    self.cv.wait(&mut st);
                }
                st.1 -= 1;
            }
        }
    }
}

fn tables(vfs: &HookVfs) -> Vec<String> {
    vfs.list_dir(Path::new("/db")).unwrap().into_iter().filter(|n| n.ends_with(".sst")).collect()
}

/// The CI failure of `get_pinned`: `compact_range` returned while its input
/// tables were still on disk, because the idle compaction thread had taken
/// them from the obsolete set and was still deleting them.
#[test]
fn compact_range_returns_after_a_concurrent_purge_deleted_its_inputs() {
    let gate = Arc::new(Gate::default());
    let pass = gate.clone();
    let vfs = Arc::new(HookVfs::new(MemVfs::new()).on_remove(Box::new(move |p| pass.pass(p))));
    let db = Db::open("/db", Options::default().with_vfs(vfs.clone()).with_disable_auto_compactions(true))
        .unwrap();
    for round in 0..2u8 {
        for i in 0..100u32 {
            db.put(format!("k{i:04}"), [round; 100]).unwrap();
        }
        db.flush().unwrap();
    }
    let before = tables(&vfs);
    assert_eq!(before.len(), 2, "{before:?}");

    // An iterator keeps the inputs alive through the compaction; dropping it
    // makes them obsolete with nothing but the idle background loop to purge.
    let it = db.iter();
    db.compact_range(None, None).unwrap();
    assert_eq!(tables(&vfs).len(), 3, "inputs still referenced by the iterator");
    gate.state.lock().0 = true;
    drop(it);
    {
        let mut st = gate.state.lock();
        while st.1 == 0 {
            gate.cv.wait(&mut st);
        }
    }

    // The background purge is stuck inside the deletion of an input. Another
    // compact_range must not return before that deletion is done.
    let after = std::thread::scope(|s| {
        let caller = s.spawn(|| {
            db.compact_range(None, None).unwrap();
            tables(&vfs)
        });
        // Give the caller time to return early if it would (it must not); then
        // open the gate. With the fix the outcome does not depend on this wait.
        let deadline = std::time::Instant::now() + Duration::from_millis(300);
        while !caller.is_finished() && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        gate.state.lock().0 = false;
        gate.cv.notify_all();
        caller.join().unwrap()
    });
    assert!(before.iter().all(|t| !after.contains(t)), "{before:?} still in {after:?}");
    assert_eq!(db.get("k0001").unwrap(), Some(vec![1; 100]));
}
