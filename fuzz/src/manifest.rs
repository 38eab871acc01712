//! MANIFEST decoding: `VersionEdit::decode` on arbitrary bytes (a decoded edit
//! must survive encode/decode unchanged), then a whole MANIFEST replayed by
//! `read_manifest` and recovered by `Db::open` on an in-memory file system.
//! The first byte picks how the MANIFEST is made: the raw bytes; fuzz-chosen
//! records framed correctly; or the same after a valid snapshot record, so
//! recovery's validation of later edits is reached.

use std::path::Path;
use std::sync::Arc;

use strata::filename::{current_path, manifest_path};
use strata::version::{read_manifest, VersionEdit};
use strata::vfs::Vfs;
use strata::wal::LogWriter;
use strata::{CompactionStyle, Db, MemVfs, Options};

use super::input::Input;

/// The fuzz body.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let mode = input.u8() % 3;
    let paranoid = input.chance(128);
    let names = CompactionStyle::builtin_names();
    let policy = names[input.below(names.len())];
    let file = if mode == 0 {
        let bytes = input.rest();
        check_round_trip(bytes);
        bytes.to_vec()
    } else {
        let mut records = Vec::new();
        if mode == 2 {
            let snapshot = VersionEdit {
                log_number: Some(0),
                next_file_number: Some(1000),
                last_sequence: Some(u64::from(input.u16())),
                ..Default::default()
            };
            records.push(snapshot.encode());
        }
        while !input.is_empty() && records.len() < 16 {
            let r = input.bytes(255);
            check_round_trip(&r);
            records.push(r);
        }
        frame(&records)
    };
    recover(file, paranoid, policy);
}

fn check_round_trip(bytes: &[u8]) {
    if let Ok(edit) = VersionEdit::decode(bytes) {
        let again = VersionEdit::decode(&edit.encode()).expect("a re-encoded edit decodes");
        assert_eq!(again, edit, "encode/decode round trip changed the edit");
    }
}

/// Records in the log format, as `ManifestWriter` writes them.
fn frame(records: &[Vec<u8>]) -> Vec<u8> {
    let file = super::mem::MemFile::default();
    let mut w = LogWriter::new(Box::new(file.clone()));
    for r in records {
        w.add_record(r).expect("add record");
    }
    w.flush().expect("flush");
    file.bytes()
}

/// Replays the MANIFEST, then opens a database on it: errors are fine, panics
/// and hangs are not.
fn recover(manifest: Vec<u8>, paranoid: bool, policy: &str) {
    let vfs = MemVfs::new();
    let dir = Path::new("/db");
    vfs.create_dir_all(dir).expect("mkdir");
    let mut f = vfs.create(&manifest_path(dir, 1)).expect("create manifest");
    f.append(&manifest).expect("write manifest");
    f.sync().expect("sync");
    drop(f);
    let mut c = vfs.create(&current_path(dir)).expect("create CURRENT");
    c.append(b"MANIFEST-000001\n").expect("write CURRENT");
    c.sync().expect("sync");
    drop(c);
    let _ = read_manifest(&vfs, &manifest_path(dir, 1), |_| Ok(()));
    let opts = Options::default()
        .with_vfs(Arc::new(vfs))
        .with_paranoid_checks(paranoid)
        .with_compaction_style(CompactionStyle::from_name(policy).expect("builtin policy"))
        .with_write_buffer_size(4096);
    if let Ok(db) = Db::open(dir, opts) {
        let _ = db.get(b"k");
        let _ = db.iter().take(64).count();
        let _ = db.put(b"k", b"v");
        let _ = db.close();
    }
}
