//! `VersionEdit`: one atomic change to the tree, and its MANIFEST encoding.
//!
//! An encoded edit is a sequence of fields, each a varint tag followed by its
//! payload (varints and varint-length-prefixed byte strings). See
//! docs/FORMAT.md for the tag table.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::key::{SeqNum, MAX_SEQ};
use crate::table::segment::check_segment_list;
use crate::table::SegmentMeta;
use crate::util::coding::{put_fixed32, put_fixed64, put_length_prefixed, put_varint64, Reader};

use super::file_meta::NewFile;

const TAG_LOG_NUMBER: u64 = 1;
const TAG_NEXT_FILE_NUMBER: u64 = 2;
const TAG_LAST_SEQUENCE: u64 = 3;
const TAG_COMPACT_POINTER: u64 = 4;
const TAG_DELETED_FILE: u64 = 5;
const TAG_NEW_FILE: u64 = 6;
const TAG_POLICY_STATE: u64 = 7;
const TAG_BUFFER_APPEND: u64 = 8;
const TAG_BUFFER_REMOVE: u64 = 9;
const TAG_BUFFER_DROP_TABLE: u64 = 10;
const TAG_BUFFER_COMPLETE: u64 = 11;
/// A listed file's bloom bits per key. A tag of its own, not a new field of
/// tag 6, so that records written before it existed still parse.
const TAG_FILE_BLOOM_BITS: u64 = 12;
/// A listed file's segments when it has several (a DTable of the `lwc`
/// policy): count, then each segment's end offset and footer CRC. Not
/// ignorable: without it the file would read as its last segment alone.
const TAG_FILE_SEGMENTS: u64 = 14;
/// A listed file's count of range tombstones, when it has any. Not
/// ignorable: a reader that does not know it would miss the deletions.
const TAG_FILE_RANGE_DELS: u64 = 15;
/// The keyspace registry (root MANIFEST only): a keyspace added (id, name,
/// persisted options), a keyspace dropped (id), and the next id to hand out.
/// Written only by databases that create keyspaces.
const TAG_KEYSPACE_ADD: u64 = 20;
const TAG_KEYSPACE_DROP: u64 = 21;
const TAG_NEXT_KEYSPACE_ID: u64 = 22;
/// The default tree's persisted options (root MANIFEST). Safe to ignore:
/// a reader without it opens with the options it is given, as before.
const TAG_DEFAULT_OPTIONS: u64 = TAG_SAFE_TO_IGNORE | 23;
/// A registered keyspace's options replaced (id, persisted options). Safe to
/// ignore: a reader without it opens the keyspace with its older options,
/// which read the same data.
const TAG_KEYSPACE_SET_OPTIONS: u64 = TAG_SAFE_TO_IGNORE | 24;
/// The oldest WAL the database still needs (root MANIFEST of a database with
/// keyspaces). Safe to ignore: a reader without it checks less at open.
const TAG_WAL_FLOOR: u64 = TAG_SAFE_TO_IGNORE | 25;
/// A WAL created (root MANIFEST of a database with keyspaces), so an open
/// can tell a WAL deleted from the middle of the chain (RocksDB's
/// `track_and_verify_wals_in_manifest`).
const TAG_WAL_CREATED: u64 = TAG_SAFE_TO_IGNORE | 26;
/// Tags with this bit set carry a length-prefixed payload that a reader which
/// does not know the tag may skip: information that only makes something
/// better (RocksDB's `kTagSafeIgnoreMask`). Every other unknown tag changes
/// state a reader must understand, and is `Corruption`.
pub(crate) const TAG_SAFE_TO_IGNORE: u64 = 1 << 13;

/// A change to a compaction buffer (LSbM). Applied after the edit's file
/// deletions and additions, in order. `level`/`run` name the data run the buffer
/// is attached to; a buffer whose run no longer exists is dropped.
#[derive(Clone, Debug, PartialEq)]
pub enum BufferOp {
    /// Adds `file` (an existing table, no I/O) to table `table`, which is created
    /// as the newest table of the buffer if missing.
    Append {
        /// Level of the run.
        level: usize,
        /// Data run the buffer belongs to.
        run: u64,
        /// Buffer table id.
        table: u64,
        /// The file's metadata.
        file: NewFile,
    },
    /// Marks the user-key range `[lo, hi]` removed in table `table` (created as
    /// the newest table if missing); present files overlapping it leave the buffer.
    Remove {
        /// Level of the run.
        level: usize,
        /// Data run the buffer belongs to.
        run: u64,
        /// Buffer table id.
        table: u64,
        /// Smallest user key.
        lo: Vec<u8>,
        /// Largest user key.
        hi: Vec<u8>,
    },
    /// Drops a whole table.
    DropTable {
        /// Level of the run.
        level: usize,
        /// Data run the buffer belongs to.
        run: u64,
        /// Buffer table id.
        table: u64,
    },
    /// The buffer of the run holds a copy of every entry of the run, so a
    /// range read may use it instead of the run (LSbM Algorithm 4). Written
    /// only in a MANIFEST snapshot: live edits derive it (see the builder).
    Complete {
        /// Level of the run.
        level: usize,
        /// The data run.
        run: u64,
    },
}

/// A change to the keyspace registry kept in the root MANIFEST.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyspaceOp {
    /// A keyspace was created.
    Add {
        /// Its id (never reused).
        id: u32,
        /// Its name.
        name: String,
        /// Its persisted options (see `KeyspaceOptions`).
        options: Vec<u8>,
    },
    /// A keyspace was dropped.
    Drop {
        /// Its id.
        id: u32,
    },
    /// A keyspace's persisted options were replaced (it was opened with
    /// other per-tree options). Only in live edits: a snapshot's `Add`
    /// carries the current options.
    SetOptions {
        /// Its id.
        id: u32,
        /// Its new persisted options (see `KeyspaceOptions`).
        options: Vec<u8>,
    },
}

/// One atomic change to the version state. Deletions apply before additions, so
/// an edit can move a file between runs or levels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VersionEdit {
    /// WALs with a number `>=` this must be replayed at recovery.
    pub log_number: Option<u64>,
    /// The next unused file number (filled in by `log_and_apply`).
    pub next_file_number: Option<u64>,
    /// The last sequence number used (filled in by `log_and_apply` if unset).
    pub last_sequence: Option<SeqNum>,
    /// `(level, run id, file id)` to remove from that run.
    pub deleted_files: Vec<(usize, u64, u64)>,
    /// `(level, run id, file)` to add to that run (created if missing).
    pub new_files: Vec<(usize, u64, NewFile)>,
    /// Per-level round-robin cursor (a user key) of the leveled policy; later entries win.
    pub compact_pointers: Vec<(usize, Vec<u8>)>,
    /// Opaque policy blob; replaces the stored one (`Some(vec![])` clears it).
    pub policy_state: Option<Vec<u8>>,
    /// Compaction-buffer changes, applied in order after the file changes.
    pub buffer_ops: Vec<BufferOp>,
    /// Keyspace registry changes (root MANIFEST only), applied in order.
    pub keyspace_ops: Vec<KeyspaceOp>,
    /// The next keyspace id to hand out.
    pub next_keyspace_id: Option<u32>,
    /// The default tree's persisted options (root MANIFEST only; see
    /// `KeyspaceOptions`); replaces the stored ones.
    pub default_options: Option<Vec<u8>>,
    /// The oldest WAL still needed (root MANIFEST of a database with
    /// keyspaces): recorded before older WALs are deleted.
    pub wal_floor: Option<u64>,
    /// WALs created (root MANIFEST of a database with keyspaces): each must
    /// be on disk until the WAL floor passes it.
    pub wals_created: Vec<u64>,
}

impl VersionEdit {
    /// Serializes the edit.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        for (tag, v) in [
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_NEXT_FILE_NUMBER, self.next_file_number),
            (TAG_LAST_SEQUENCE, self.last_sequence),
        ] {
            if let Some(v) = v {
                put_varint64(&mut b, tag);
                put_varint64(&mut b, v);
            }
        }
        for (level, key) in &self.compact_pointers {
            put_varint64(&mut b, TAG_COMPACT_POINTER);
            put_varint64(&mut b, *level as u64);
            put_length_prefixed(&mut b, key);
        }
        for &(level, run, file) in &self.deleted_files {
            put_varint64(&mut b, TAG_DELETED_FILE);
            put_varint64(&mut b, level as u64);
            put_varint64(&mut b, run);
            put_varint64(&mut b, file);
        }
        for (level, run, f) in &self.new_files {
            put_varint64(&mut b, TAG_NEW_FILE);
            put_varint64(&mut b, *level as u64);
            put_varint64(&mut b, *run);
            put_new_file(&mut b, f);
        }
        if let Some(state) = &self.policy_state {
            put_varint64(&mut b, TAG_POLICY_STATE);
            put_length_prefixed(&mut b, state);
        }
        for op in &self.buffer_ops {
            match op {
                BufferOp::Append { level, run, table, file } => {
                    put_varint64(&mut b, TAG_BUFFER_APPEND);
                    for v in [*level as u64, *run, *table] {
                        put_varint64(&mut b, v);
                    }
                    put_new_file(&mut b, file);
                }
                BufferOp::Remove { level, run, table, lo, hi } => {
                    put_varint64(&mut b, TAG_BUFFER_REMOVE);
                    for v in [*level as u64, *run, *table] {
                        put_varint64(&mut b, v);
                    }
                    put_length_prefixed(&mut b, lo);
                    put_length_prefixed(&mut b, hi);
                }
                BufferOp::DropTable { level, run, table } => {
                    put_varint64(&mut b, TAG_BUFFER_DROP_TABLE);
                    for v in [*level as u64, *run, *table] {
                        put_varint64(&mut b, v);
                    }
                }
                BufferOp::Complete { level, run } => {
                    put_varint64(&mut b, TAG_BUFFER_COMPLETE);
                    put_varint64(&mut b, *level as u64);
                    put_varint64(&mut b, *run);
                }
            }
        }
        for op in &self.keyspace_ops {
            match op {
                KeyspaceOp::Add { id, name, options } => {
                    put_varint64(&mut b, TAG_KEYSPACE_ADD);
                    put_varint64(&mut b, u64::from(*id));
                    put_length_prefixed(&mut b, name.as_bytes());
                    put_length_prefixed(&mut b, options);
                }
                KeyspaceOp::Drop { id } => {
                    put_varint64(&mut b, TAG_KEYSPACE_DROP);
                    put_varint64(&mut b, u64::from(*id));
                }
                KeyspaceOp::SetOptions { id, options } => {
                    // One length-prefixed payload, so a reader may skip it.
                    let mut p = Vec::new();
                    put_varint64(&mut p, u64::from(*id));
                    p.extend_from_slice(options);
                    put_varint64(&mut b, TAG_KEYSPACE_SET_OPTIONS);
                    put_length_prefixed(&mut b, &p);
                }
            }
        }
        if let Some(n) = self.next_keyspace_id {
            put_varint64(&mut b, TAG_NEXT_KEYSPACE_ID);
            put_varint64(&mut b, u64::from(n));
        }
        if let Some(o) = &self.default_options {
            put_varint64(&mut b, TAG_DEFAULT_OPTIONS);
            put_length_prefixed(&mut b, o);
        }
        if let Some(n) = self.wal_floor {
            let mut p = Vec::new();
            put_varint64(&mut p, n);
            put_varint64(&mut b, TAG_WAL_FLOOR);
            put_length_prefixed(&mut b, &p);
        }
        for &n in &self.wals_created {
            let mut p = Vec::new();
            put_varint64(&mut p, n);
            put_varint64(&mut b, TAG_WAL_CREATED);
            put_length_prefixed(&mut b, &p);
        }
        // One per file, after every listing of it.
        let mut bits = BTreeMap::new();
        for f in self.listed_files() {
            if let Some(v) = f.bloom_bits_per_key {
                bits.entry(f.id).or_insert(v);
            }
        }
        for (id, v) in bits {
            put_varint64(&mut b, TAG_FILE_BLOOM_BITS);
            put_varint64(&mut b, id);
            put_fixed64(&mut b, v.to_bits());
        }
        let mut segments = BTreeMap::new();
        for f in self.listed_files().filter(|f| !f.segments.is_empty()) {
            segments.entry(f.id).or_insert(&f.segments);
        }
        let mut range_dels = BTreeMap::new();
        for f in self.listed_files().filter(|f| f.num_range_dels > 0) {
            range_dels.entry(f.id).or_insert(f.num_range_dels);
        }
        for (id, n) in range_dels {
            put_varint64(&mut b, TAG_FILE_RANGE_DELS);
            put_varint64(&mut b, id);
            put_varint64(&mut b, n);
        }
        for (id, segs) in segments {
            put_varint64(&mut b, TAG_FILE_SEGMENTS);
            put_varint64(&mut b, id);
            put_varint64(&mut b, segs.len() as u64);
            for s in segs {
                put_varint64(&mut b, s.end);
                put_fixed32(&mut b, s.footer_crc);
            }
        }
        b
    }

    /// Every file the edit lists: new files, then buffer appends.
    fn listed_files(&self) -> impl Iterator<Item = &NewFile> {
        let appended = self.buffer_ops.iter().filter_map(|op| match op {
            BufferOp::Append { file, .. } => Some(file),
            _ => None,
        });
        self.new_files.iter().map(|(_, _, f)| f).chain(appended)
    }

    /// Parses an encoded edit. Unknown tags, repeated scalar fields and
    /// truncated payloads are `Corruption`.
    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut r = Reader::new(data);
        let mut e = VersionEdit::default();
        let mut bloom_bits = BTreeMap::new();
        let mut segments = BTreeMap::new();
        let mut range_dels = BTreeMap::new();
        while !r.is_empty() {
            let tag = r.varint64().ok_or_else(|| bad("tag"))?;
            match tag {
                TAG_LOG_NUMBER => set_once(&mut e.log_number, r.varint64(), "log number")?,
                TAG_NEXT_FILE_NUMBER => set_once(&mut e.next_file_number, r.varint64(), "next file number")?,
                TAG_LAST_SEQUENCE => {
                    set_once(&mut e.last_sequence, Some(seq(&mut r, "last sequence")?), "last sequence")?
                }
                TAG_COMPACT_POINTER => {
                    let level = level(&mut r)?;
                    let key = r.length_prefixed().ok_or_else(|| bad("compact pointer"))?;
                    e.compact_pointers.push((level, key.to_vec()));
                }
                TAG_DELETED_FILE => {
                    let level = level(&mut r)?;
                    let (run, file) = (varint(&mut r, "deleted run")?, varint(&mut r, "deleted file")?);
                    e.deleted_files.push((level, run, file));
                }
                TAG_NEW_FILE => {
                    let level = level(&mut r)?;
                    let run = varint(&mut r, "new file run")?;
                    e.new_files.push((level, run, new_file(&mut r)?));
                }
                TAG_POLICY_STATE => {
                    let state = r.length_prefixed().ok_or_else(|| bad("policy state"))?;
                    set_once(&mut e.policy_state, Some(state.to_vec()), "policy state")?;
                }
                TAG_BUFFER_APPEND => {
                    let (level, run, table) = buffer_target(&mut r)?;
                    e.buffer_ops.push(BufferOp::Append { level, run, table, file: new_file(&mut r)? });
                }
                TAG_BUFFER_REMOVE => {
                    let (level, run, table) = buffer_target(&mut r)?;
                    let lo = r.length_prefixed().ok_or_else(|| bad("buffer mark"))?.to_vec();
                    let hi = r.length_prefixed().ok_or_else(|| bad("buffer mark"))?.to_vec();
                    if lo > hi {
                        return Err(bad("buffer mark range"));
                    }
                    e.buffer_ops.push(BufferOp::Remove { level, run, table, lo, hi });
                }
                TAG_BUFFER_DROP_TABLE => {
                    let (level, run, table) = buffer_target(&mut r)?;
                    e.buffer_ops.push(BufferOp::DropTable { level, run, table });
                }
                TAG_BUFFER_COMPLETE => {
                    let level = level(&mut r)?;
                    let run = varint(&mut r, "complete buffer run")?;
                    e.buffer_ops.push(BufferOp::Complete { level, run });
                }
                TAG_FILE_BLOOM_BITS => {
                    let id = varint(&mut r, "bloom bits file")?;
                    let v = f64::from_bits(r.fixed64().ok_or_else(|| bad("bloom bits"))?);
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(bad("bloom bits"));
                    }
                    if bloom_bits.insert(id, v).is_some() {
                        return Err(Error::corruption(format!(
                            "version edit: bloom bits of file {id} given twice"
                        )));
                    }
                }
                TAG_FILE_SEGMENTS => {
                    let id = varint(&mut r, "segments file")?;
                    let n = varint(&mut r, "segment count")?;
                    if !(2..=1 << 20).contains(&n) {
                        return Err(bad("segment count"));
                    }
                    // A damaged count must not reserve much before the payload runs out.
                    let mut segs = Vec::with_capacity(n.min(64) as usize);
                    for _ in 0..n {
                        let end = varint(&mut r, "segment end")?;
                        let footer_crc = r.fixed32().ok_or_else(|| bad("segment checksum"))?;
                        segs.push(SegmentMeta { end, footer_crc });
                    }
                    if segments.insert(id, segs).is_some() {
                        return Err(Error::corruption(format!(
                            "version edit: segments of file {id} given twice"
                        )));
                    }
                }
                TAG_FILE_RANGE_DELS => {
                    let id = varint(&mut r, "range deletions file")?;
                    let n = varint(&mut r, "range deletion count")?;
                    if n == 0 || range_dels.insert(id, n).is_some() {
                        return Err(Error::corruption(format!(
                            "version edit: range deletion count of file {id} zero or given twice"
                        )));
                    }
                }
                TAG_KEYSPACE_ADD => {
                    let id = keyspace_id(&mut r)?;
                    let name = r.length_prefixed().ok_or_else(|| bad("keyspace name"))?;
                    let name = String::from_utf8(name.to_vec()).map_err(|_| bad("keyspace name"))?;
                    let options = r.length_prefixed().ok_or_else(|| bad("keyspace options"))?.to_vec();
                    e.keyspace_ops.push(KeyspaceOp::Add { id, name, options });
                }
                TAG_KEYSPACE_DROP => {
                    let id = keyspace_id(&mut r)?;
                    e.keyspace_ops.push(KeyspaceOp::Drop { id });
                }
                TAG_NEXT_KEYSPACE_ID => {
                    let n = u32::try_from(varint(&mut r, "next keyspace id")?)
                        .map_err(|_| bad("next keyspace id"))?;
                    set_once(&mut e.next_keyspace_id, Some(n), "next keyspace id")?;
                }
                TAG_DEFAULT_OPTIONS => {
                    let o = r.length_prefixed().ok_or_else(|| bad("default options"))?;
                    set_once(&mut e.default_options, Some(o.to_vec()), "default options")?;
                }
                TAG_WAL_FLOOR => {
                    let p = r.length_prefixed().ok_or_else(|| bad("WAL floor"))?;
                    let n = varint(&mut Reader::new(p), "WAL floor")?;
                    set_once(&mut e.wal_floor, Some(n), "WAL floor")?;
                }
                TAG_WAL_CREATED => {
                    let p = r.length_prefixed().ok_or_else(|| bad("WAL created"))?;
                    e.wals_created.push(varint(&mut Reader::new(p), "WAL created")?);
                }
                TAG_KEYSPACE_SET_OPTIONS => {
                    let p = r.length_prefixed().ok_or_else(|| bad("keyspace options"))?;
                    let mut pr = Reader::new(p);
                    let id = keyspace_id(&mut pr)?;
                    let options = pr.remaining().to_vec();
                    e.keyspace_ops.push(KeyspaceOp::SetOptions { id, options });
                }
                other if other & TAG_SAFE_TO_IGNORE != 0 => {
                    r.length_prefixed().ok_or_else(|| bad("ignorable field"))?;
                }
                other => return Err(Error::corruption(format!("version edit: unknown tag {other}"))),
            }
        }
        for (id, v) in bloom_bits {
            let appended = e.buffer_ops.iter_mut().filter_map(|op| match op {
                BufferOp::Append { file, .. } => Some(file),
                _ => None,
            });
            let mut listed = false;
            for f in e.new_files.iter_mut().map(|(_, _, f)| f).chain(appended).filter(|f| f.id == id) {
                f.bloom_bits_per_key = Some(v);
                listed = true;
            }
            if !listed {
                return Err(Error::corruption(format!("version edit: bloom bits of unlisted file {id}")));
            }
        }
        for (id, n) in range_dels {
            let appended = e.buffer_ops.iter_mut().filter_map(|op| match op {
                BufferOp::Append { file, .. } => Some(file),
                _ => None,
            });
            let mut listed = false;
            for f in e.new_files.iter_mut().map(|(_, _, f)| f).chain(appended).filter(|f| f.id == id) {
                f.num_range_dels = n;
                listed = true;
            }
            if !listed {
                return Err(Error::corruption(format!(
                    "version edit: range deletions of unlisted file {id}"
                )));
            }
        }
        for (id, segs) in segments {
            let appended = e.buffer_ops.iter_mut().filter_map(|op| match op {
                BufferOp::Append { file, .. } => Some(file),
                _ => None,
            });
            let mut listed = false;
            for f in e.new_files.iter_mut().map(|(_, _, f)| f).chain(appended).filter(|f| f.id == id) {
                check_segment_list(&segs, f.size)
                    .map_err(|m| Error::corruption(format!("version edit: file {id}: {m}")))?;
                f.segments = segs.clone();
                listed = true;
            }
            if !listed {
                return Err(Error::corruption(format!("version edit: segments of unlisted file {id}")));
            }
        }
        Ok(e)
    }
}

fn bad(what: &str) -> Error {
    Error::corruption(format!("version edit: bad {what}"))
}

fn varint(r: &mut Reader<'_>, what: &str) -> Result<u64> {
    r.varint64().ok_or_else(|| bad(what))
}

/// A keyspace id: 1 to `u32::MAX` (0 is the default keyspace, never registered).
fn keyspace_id(r: &mut Reader<'_>) -> Result<u32> {
    u32::try_from(varint(r, "keyspace id")?).ok().filter(|&id| id != 0).ok_or_else(|| bad("keyspace id"))
}

fn level(r: &mut Reader<'_>) -> Result<usize> {
    usize::try_from(varint(r, "level")?).map_err(|_| bad("level"))
}

fn buffer_target(r: &mut Reader<'_>) -> Result<(usize, u64, u64)> {
    Ok((level(r)?, varint(r, "buffer run")?, varint(r, "buffer table")?))
}

fn put_new_file(b: &mut Vec<u8>, f: &NewFile) {
    put_varint64(b, f.id);
    put_varint64(b, f.size);
    put_length_prefixed(b, &f.smallest);
    put_length_prefixed(b, &f.largest);
    put_varint64(b, f.num_entries);
    put_varint64(b, f.num_deletions);
    put_varint64(b, f.smallest_seq);
    put_varint64(b, f.largest_seq);
}

fn set_once<T>(slot: &mut Option<T>, v: Option<T>, what: &str) -> Result<()> {
    let v = v.ok_or_else(|| bad(what))?;
    if slot.replace(v).is_some() {
        return Err(Error::corruption(format!("version edit: {what} given twice")));
    }
    Ok(())
}

fn new_file(r: &mut Reader<'_>) -> Result<NewFile> {
    Ok(NewFile {
        id: varint(r, "file id")?,
        size: varint(r, "file size")?,
        smallest: r.length_prefixed().ok_or_else(|| bad("smallest key"))?.to_vec(),
        largest: r.length_prefixed().ok_or_else(|| bad("largest key"))?.to_vec(),
        num_entries: varint(r, "entry count")?,
        num_deletions: varint(r, "deletion count")?,
        smallest_seq: seq(r, "smallest seq")?,
        largest_seq: seq(r, "largest seq")?,
        bloom_bits_per_key: None,
        segments: Vec::new(),
        num_range_dels: 0,
    })
}

/// A sequence number: it must fit the 56 bits of an internal key's trailer.
fn seq(r: &mut Reader<'_>, what: &str) -> Result<SeqNum> {
    let v = varint(r, what)?;
    if v > MAX_SEQ {
        return Err(Error::corruption(format!("version edit: {what} {v} exceeds the 56-bit maximum")));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn bytes(rng: &mut SmallRng, max: usize) -> Vec<u8> {
        let n = rng.gen_range(0..=max);
        (0..n).map(|_| rng.gen()).collect()
    }

    fn num(rng: &mut SmallRng) -> u64 {
        match rng.gen_range(0..3) {
            0 => rng.gen_range(0..200),
            1 => rng.gen(),
            _ => u64::MAX,
        }
    }

    pub(crate) fn random_edit(rng: &mut SmallRng) -> VersionEdit {
        let opt = |rng: &mut SmallRng| if rng.gen_bool(0.5) { Some(num(rng) & MAX_SEQ) } else { None };
        VersionEdit {
            log_number: opt(rng),
            next_file_number: opt(rng),
            last_sequence: opt(rng),
            deleted_files: (0..rng.gen_range(0..4))
                .map(|_| (rng.gen_range(0..10), num(rng), num(rng)))
                .collect(),
            new_files: (0..rng.gen_range(0..4))
                .map(|_| {
                    let f = NewFile {
                        id: num(rng),
                        size: num(rng),
                        smallest: bytes(rng, 20),
                        largest: bytes(rng, 20),
                        num_entries: num(rng),
                        num_deletions: num(rng),
                        smallest_seq: num(rng) & MAX_SEQ,
                        largest_seq: num(rng) & MAX_SEQ,
                        bloom_bits_per_key: None,
                        segments: Vec::new(),
                        num_range_dels: 0,
                    };
                    (rng.gen_range(0..10), num(rng), f)
                })
                .collect(),
            compact_pointers: (0..rng.gen_range(0..3))
                .map(|_| (rng.gen_range(0..10), bytes(rng, 10)))
                .collect(),
            policy_state: if rng.gen_bool(0.5) { Some(bytes(rng, 30)) } else { None },
            buffer_ops: (0..rng.gen_range(0..4))
                .map(|_| {
                    let (level, run, table) = (rng.gen_range(0..10), num(rng), num(rng));
                    match rng.gen_range(0..4) {
                        0 => BufferOp::DropTable { level, run, table },
                        3 => BufferOp::Complete { level, run },
                        1 => {
                            let (a, b) = (bytes(rng, 8), bytes(rng, 8));
                            BufferOp::Remove { level, run, table, lo: a.clone().min(b.clone()), hi: a.max(b) }
                        }
                        _ => {
                            let file = NewFile { id: num(rng), size: num(rng), ..NewFile::default() };
                            BufferOp::Append { level, run, table, file }
                        }
                    }
                })
                .collect(),
            keyspace_ops: (0..rng.gen_range(0..3))
                .map(|_| {
                    let id = rng.gen_range(1..=u32::MAX);
                    match rng.gen_range(0..3) {
                        0 => KeyspaceOp::Drop { id },
                        1 => KeyspaceOp::SetOptions { id, options: bytes(rng, 12) },
                        _ => {
                            let name = format!("ks{}", num(rng));
                            KeyspaceOp::Add { id, name, options: bytes(rng, 12) }
                        }
                    }
                })
                .collect(),
            next_keyspace_id: rng.gen_bool(0.3).then(|| rng.gen()),
            default_options: rng.gen_bool(0.3).then(|| bytes(rng, 12)),
            wal_floor: opt(rng),
            wals_created: (0..rng.gen_range(0..3)).map(|_| num(rng)).collect(),
        }
    }

    /// Bits follow the file id, so every listing of one file agrees (as in
    /// the engine, where they come from one `FileMeta`).
    fn bits_of(id: u64) -> Option<f64> {
        (!id.is_multiple_of(3)).then(|| (id % 97) as f64 / 4.0)
    }

    /// Some files are DTables: size and segments follow the id too.
    fn segments_of(f: &mut NewFile) {
        if f.id % 5 == 1 {
            let n = 2 + f.id % 3;
            f.segments =
                (1..=n).map(|k| SegmentMeta { end: 100 * k, footer_crc: (f.id ^ k) as u32 }).collect();
            f.size = 100 * n;
        }
    }

    /// [`random_edit`] with bloom bits on most files, segments on some.
    /// Range tombstone counts are recorded per file id, like bloom bits.
    fn range_dels_of(id: u64) -> u64 {
        if id.is_multiple_of(3) {
            id % 997 + 1
        } else {
            0
        }
    }

    pub(crate) fn random_edit_with_bits(rng: &mut SmallRng) -> VersionEdit {
        let mut e = random_edit(rng);
        for (_, _, f) in &mut e.new_files {
            f.bloom_bits_per_key = bits_of(f.id);
            f.num_range_dels = range_dels_of(f.id);
            segments_of(f);
        }
        for op in &mut e.buffer_ops {
            if let BufferOp::Append { file, .. } = op {
                file.bloom_bits_per_key = bits_of(file.id);
                file.num_range_dels = range_dels_of(file.id);
                segments_of(file);
            }
        }
        e
    }

    #[test]
    fn random_edits_round_trip() {
        let mut rng = SmallRng::seed_from_u64(7);
        for _ in 0..500 {
            let e = random_edit_with_bits(&mut rng);
            assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        }
        assert_eq!(VersionEdit::decode(&[]).unwrap(), VersionEdit::default());
    }

    #[test]
    fn truncation_and_garbage_never_panic() {
        let mut rng = SmallRng::seed_from_u64(11);
        for _ in 0..200 {
            let e = random_edit_with_bits(&mut rng);
            let enc = e.encode();
            for cut in 0..enc.len() {
                // A cut at a field boundary is a valid (shorter) edit; anything
                // else must be Corruption. Neither may panic.
                if let Err(err) = VersionEdit::decode(&enc[..cut]) {
                    assert!(err.is_corruption());
                }
            }
            let mut flipped = enc.clone();
            if !flipped.is_empty() {
                let i = rng.gen_range(0..flipped.len());
                flipped[i] ^= 1 << rng.gen_range(0..8);
                let _ = VersionEdit::decode(&flipped);
            }
            let _ = VersionEdit::decode(&bytes(&mut rng, 64));
        }
    }

    #[test]
    fn unknown_safe_to_ignore_tags_are_skipped() {
        let e = VersionEdit { log_number: Some(5), last_sequence: Some(9), ..Default::default() };
        let mut enc = Vec::new();
        put_varint64(&mut enc, TAG_SAFE_TO_IGNORE | 1);
        put_length_prefixed(&mut enc, b"a future writer's hint");
        enc.extend_from_slice(&e.encode());
        put_varint64(&mut enc, TAG_SAFE_TO_IGNORE | 77);
        put_length_prefixed(&mut enc, b"");
        assert_eq!(VersionEdit::decode(&enc).unwrap(), e);
        // Its payload must still be whole, and a tag without the bit is not skipped.
        let mut cut = Vec::new();
        put_varint64(&mut cut, TAG_SAFE_TO_IGNORE | 1);
        cut.extend_from_slice(&[10, 1, 2]);
        assert!(VersionEdit::decode(&cut).unwrap_err().is_corruption());
        let mut must_know = Vec::new();
        put_varint64(&mut must_know, 77);
        put_length_prefixed(&mut must_know, b"x");
        assert!(VersionEdit::decode(&must_know).unwrap_err().is_corruption());
    }

    #[test]
    fn unknown_tag_and_duplicates_are_corruption() {
        assert!(VersionEdit::decode(&[99, 1]).unwrap_err().is_corruption());
        assert!(VersionEdit::decode(&[0]).unwrap_err().is_corruption());
        assert!(VersionEdit::decode(&[1, 5, 1, 6]).unwrap_err().is_corruption());
        // A length prefix far beyond the data.
        assert!(VersionEdit::decode(&[7, 0xff, 0xff, 0xff, 0xff, 0x0f]).unwrap_err().is_corruption());
        let e = VersionEdit { log_number: Some(5), ..Default::default() };
        assert_eq!(VersionEdit::decode(&[1, 5]).unwrap(), e);
    }

    #[test]
    fn bloom_bits_tag_is_optional_and_checked() {
        let f = NewFile { id: 9, smallest: vec![1; 9], largest: vec![2; 9], ..NewFile::default() };
        let old = VersionEdit { new_files: vec![(1, 4, f.clone())], ..Default::default() };
        // A record without tag 12 (as older versions wrote) reads as unknown bits.
        let enc = old.encode();
        assert_eq!(VersionEdit::decode(&enc).unwrap().new_files[0].2.bloom_bits_per_key, None);
        let with = |bits: f64| {
            let mut e = old.clone();
            e.new_files[0].2.bloom_bits_per_key = Some(bits);
            e
        };
        let enc = with(4.25).encode();
        let tail = {
            let mut t = vec![TAG_FILE_BLOOM_BITS as u8, 9];
            t.extend_from_slice(&4.25f64.to_bits().to_le_bytes());
            t
        };
        assert!(enc.ends_with(&tail), "tag 12 comes last: {enc:?}");
        assert_eq!(VersionEdit::decode(&enc).unwrap(), with(4.25));
        // Twice, for an unlisted file, or not a finite non-negative number: Corruption.
        let mut twice = enc.clone();
        twice.extend_from_slice(&tail);
        assert!(VersionEdit::decode(&twice).unwrap_err().is_corruption());
        let mut unlisted = enc.clone();
        unlisted.extend_from_slice(&[TAG_FILE_BLOOM_BITS as u8, 8]);
        unlisted.extend_from_slice(&1.0f64.to_bits().to_le_bytes());
        assert!(VersionEdit::decode(&unlisted).unwrap_err().is_corruption());
        for v in [-1.0f64, f64::NAN, f64::INFINITY] {
            let mut bad = old.encode();
            bad.extend_from_slice(&[TAG_FILE_BLOOM_BITS as u8, 9]);
            bad.extend_from_slice(&v.to_bits().to_le_bytes());
            assert!(VersionEdit::decode(&bad).unwrap_err().is_corruption(), "{v}");
        }
    }
}
