//! [`WriteBatch`]: puts, deletes and merges applied atomically, and the byte format in
//! which a batch is stored as one WAL record.
//!
//! Encoding (all integers little-endian):
//! ```text
//! sequence: u64      sequence number of the first operation; op i gets sequence + i
//! count:    u32      number of operations
//! then `count` records:
//!   [0x40, varint32 keyspace id]      only for an op of a keyspace other than the default (id 0)
//!   kind:   u8       ValueKind as u8 (0 = delete, 1 = put, 2 = merge, 3 = range delete)
//!   key:    varint length, bytes       (a range delete's start, inclusive)
//!   value:  varint length, bytes       (puts, merges; a range delete's end, exclusive)
//! ```
//! Ops of the default keyspace carry no prefix, so batches without keyspaces
//! are byte-identical to those of older versions.

use crate::error::{Error, Result};
use crate::key::{SeqNum, ValueKind};
use crate::util::coding::{decode_fixed32, decode_fixed64, put_length_prefixed, put_varint32, Reader};
use crate::Keyspace;

/// Marks the next op as one of the keyspace whose id follows (a varint).
/// Not a `ValueKind`, so an older reader refuses it as an unknown kind.
const KEYSPACE_PREFIX: u8 = 0x40;

/// Bytes of the sequence + count header.
const HEADER_LEN: usize = 12;

/// An ordered group of puts, deletes, merges and range deletes that is
/// applied atomically (RocksDB `WriteBatch`): after a crash either all of it
/// is there or none. With `*_cf` ops it spans keyspaces.
///
/// # Examples
///
/// ```
/// use strata::{Db, Options, WriteBatch};
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put("from", "100")?;
/// let mut batch = WriteBatch::new();
/// batch.put("to", "100");
/// batch.delete("from");
/// batch.delete_range("tmp:", "tmp;");
/// assert_eq!(batch.len(), 3);
/// db.write(batch)?;
/// assert_eq!((db.get("from")?, db.get("to")?), (None, Some(b"100".to_vec())));
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteBatch {
    /// The encoded batch, header included; always at least `HEADER_LEN` bytes.
    rep: Vec<u8>,
    /// The database whose keyspace handles the `*_cf` ops came from. The
    /// encoding carries only keyspace ids, which another database may also
    /// use, so the write checks this instead.
    owner: HandleOwner,
}

/// The end of a batch at some moment ([`WriteBatch::mark`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BatchMark {
    /// Bytes of the encoding; ops added later start here.
    pub len: usize,
    count: u32,
    owner: HandleOwner,
}

/// Which database a batch's keyspace handles belong to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum HandleOwner {
    /// No op came through a handle.
    #[default]
    None,
    /// Every handle was of the database with this instance id.
    Db(u64),
    /// Handles of two different databases were used.
    Mixed,
}

impl HandleOwner {
    fn with(self, db: u64) -> HandleOwner {
        match self {
            HandleOwner::None => HandleOwner::Db(db),
            HandleOwner::Db(d) if d == db => self,
            _ => HandleOwner::Mixed,
        }
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch { rep: vec![0; HEADER_LEN], owner: HandleOwner::None }
    }
}

/// One operation of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOp<'a> {
    /// Put, delete or merge.
    pub kind: ValueKind,
    /// The user key.
    pub key: &'a [u8],
    /// The value (empty for a delete; the operand for a merge; the
    /// exclusive end of a range delete, whose `key` is its start).
    pub value: &'a [u8],
    /// The keyspace the op belongs to (0: the default keyspace).
    pub keyspace: u32,
}

impl WriteBatch {
    /// Returns an empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty batch with room for one op of `key` and `value` (and a
    /// keyspace prefix), so a single write allocates once.
    pub(crate) fn for_one_op(key: &[u8], value: &[u8]) -> Self {
        // Kind, keyspace prefix and id, and two length prefixes, at most.
        const OP_OVERHEAD: usize = 1 + 1 + 5 + 5 + 5;
        let mut rep = Vec::with_capacity(HEADER_LEN + OP_OVERHEAD + key.len() + value.len());
        rep.resize(HEADER_LEN, 0);
        WriteBatch { rep, owner: HandleOwner::None }
    }

    /// Adds a put of `key` -> `value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.push_op(0, ValueKind::Put, key.as_ref(), value.as_ref());
    }

    /// Adds a put of `key` -> `value` in keyspace `ks` (rust-rocksdb
    /// `WriteBatch::put_cf`); the batch stays atomic across keyspaces. Writing
    /// a batch that holds a handle of another database fails with
    /// `InvalidArgument` and writes nothing (this holds for every `*_cf` op).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options, WriteBatch};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let users = db.create_keyspace("users", KeyspaceOptions::default())?;
    /// let mut batch = WriteBatch::new();
    /// batch.put_cf(&users, "u1", "ada");
    /// batch.put("count", "1");
    /// db.write(batch)?;
    /// assert_eq!(users.get("u1")?, Some(b"ada".to_vec()));
    /// assert_eq!(db.get("u1")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn put_cf(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.push_cf(ks, ValueKind::Put, key.as_ref(), value.as_ref());
    }

    /// Adds a delete of `key` in keyspace `ks` (rust-rocksdb `WriteBatch::delete_cf`).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options, WriteBatch};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", KeyspaceOptions::default())?;
    /// ks.put("k", "v")?;
    /// let mut batch = WriteBatch::new();
    /// batch.delete_cf(&ks, "k");
    /// db.write(batch)?;
    /// assert_eq!(ks.get("k")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_cf(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>) {
        self.push_cf(ks, ValueKind::Delete, key.as_ref(), &[]);
    }

    /// Adds a merge of `operand` into `key` in keyspace `ks` (rust-rocksdb
    /// `WriteBatch::merge_cf`), combined by that keyspace's merge operator.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{associative_merge_operator, Db, KeyspaceOptions, MemVfs, Options, WriteBatch};
    ///
    /// let concat = associative_merge_operator("concat", |_k, existing, operand| {
    ///     Some([existing.unwrap_or_default(), operand].concat())
    /// });
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("log", KeyspaceOptions::default().with_merge_operator(concat))?;
    /// let mut batch = WriteBatch::new();
    /// batch.merge_cf(&ks, "k", "a");
    /// batch.merge_cf(&ks, "k", "b");
    /// db.write(batch)?;
    /// assert_eq!(ks.get("k")?, Some(b"ab".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn merge_cf(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) {
        self.push_cf(ks, ValueKind::Merge, key.as_ref(), operand.as_ref());
    }

    /// Appends one op of the keyspace behind handle `ks`.
    fn push_cf(&mut self, ks: &Keyspace, kind: ValueKind, key: &[u8], value: &[u8]) {
        self.owner = self.owner.with(ks.db_instance());
        self.push_op(ks.id(), kind, key, value);
    }

    /// Refuses a batch holding a keyspace handle of another database than
    /// the one with instance id `db` (rust-rocksdb cannot tell: it would
    /// write to whichever column family has that id).
    pub(crate) fn check_owner(&self, db: u64) -> Result<()> {
        match self.owner {
            HandleOwner::None => Ok(()),
            HandleOwner::Db(d) if d == db => Ok(()),
            HandleOwner::Db(_) => {
                Err(Error::invalid("the batch holds a keyspace handle of another database"))
            }
            HandleOwner::Mixed => {
                Err(Error::invalid("the batch holds keyspace handles of two different databases"))
            }
        }
    }

    /// Appends one op of keyspace `keyspace`.
    pub(crate) fn push_op(&mut self, keyspace: u32, kind: ValueKind, key: &[u8], value: &[u8]) {
        if keyspace != 0 {
            self.rep.push(KEYSPACE_PREFIX);
            put_varint32(&mut self.rep, keyspace);
        }
        self.rep.push(kind as u8);
        put_length_prefixed(&mut self.rep, key);
        if kind != ValueKind::Delete {
            put_length_prefixed(&mut self.rep, value);
        }
        self.set_count(self.count().wrapping_add(1));
    }

    /// Adds a merge of `operand` into `key` (rust-rocksdb
    /// `WriteBatch::merge`): reads combine it with the key's older versions
    /// through the database's [`MergeOperator`](crate::MergeOperator).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{associative_merge_operator, Db, MemVfs, Options, WriteBatch};
    ///
    /// let concat = associative_merge_operator("concat", |_key, existing, operand| {
    ///     Some([existing.unwrap_or_default(), operand].concat())
    /// });
    /// let opts = Options::default().with_vfs(Arc::new(MemVfs::new())).with_merge_operator(concat);
    /// let db = Db::open("/db", opts)?;
    /// let mut batch = WriteBatch::new();
    /// batch.put("k", "a");
    /// batch.merge("k", "b");
    /// batch.merge("k", "c");
    /// db.write(batch)?;
    /// assert_eq!(db.get("k")?, Some(b"abc".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) {
        self.push_op(0, ValueKind::Merge, key.as_ref(), operand.as_ref());
    }

    /// Adds a delete of `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        self.push_op(0, ValueKind::Delete, key.as_ref(), &[]);
    }

    /// Adds a deletion of every key in `[start, end)` (RocksDB's
    /// `DeleteRange`: start inclusive, end exclusive). Keys written later in
    /// the same batch, or by later writes, are not affected. A range with
    /// `start >= end` is empty: it is recorded, succeeds and deletes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{Db, MemVfs, Options, WriteBatch};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())))?;
    /// let mut batch = WriteBatch::new();
    /// batch.put("a", "1");
    /// batch.put("b", "2");
    /// batch.delete_range("a", "b");
    /// batch.put("a", "3");
    /// db.write(batch)?;
    /// assert_eq!(db.get("a")?, Some(b"3".to_vec()));
    /// assert_eq!(db.get("b")?, Some(b"2".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        self.push_op(0, ValueKind::RangeDelete, start.as_ref(), end.as_ref());
    }

    /// Adds a deletion of every key in `[start, end)` of keyspace `ks`
    /// (rust-rocksdb `WriteBatch::delete_range_cf`); see [`Self::delete_range`].
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options, WriteBatch};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// db.put("a", "1")?;
    /// let mut batch = WriteBatch::new();
    /// batch.delete_range_cf(&ks, "a", "b");
    /// db.write(batch)?;
    /// assert_eq!(ks.get("a")?, None);
    /// assert_eq!(db.get("a")?, Some(b"1".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_range_cf(&mut self, ks: &Keyspace, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        self.push_cf(ks, ValueKind::RangeDelete, start.as_ref(), end.as_ref());
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.count() as usize
    }

    /// True if the batch holds no operations.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Removes every operation and resets the sequence number.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
        self.owner = HandleOwner::None;
    }

    /// Size of the encoded batch in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.rep.len()
    }

    /// Appends the operations of `other` after this batch's (group commit).
    pub fn append(&mut self, other: &WriteBatch) {
        self.rep.extend_from_slice(other.rep.get(HEADER_LEN..).unwrap_or_default());
        // A u32 count cannot realistically overflow: that would be > 12 GiB of ops.
        self.set_count(self.count().wrapping_add(other.count()));
        if let HandleOwner::Db(d) = other.owner {
            self.owner = self.owner.with(d);
        } else if other.owner == HandleOwner::Mixed {
            self.owner = HandleOwner::Mixed;
        }
    }

    /// Sequence number of the first operation.
    pub fn sequence(&self) -> SeqNum {
        decode_fixed64(&self.rep).unwrap_or(0)
    }

    /// Sets the sequence number of the first operation.
    pub fn set_sequence(&mut self, seq: SeqNum) {
        self.rep[..8].copy_from_slice(&seq.to_le_bytes());
    }

    /// The encoded batch (as written to the WAL).
    pub fn data(&self) -> &[u8] {
        &self.rep
    }

    /// Decodes and fully validates an encoded batch; any malformation is `Corruption`.
    pub fn from_data(data: Vec<u8>) -> Result<WriteBatch> {
        if data.len() < HEADER_LEN {
            return Err(Error::corruption(format!(
                "write batch of {} bytes is shorter than its header",
                data.len()
            )));
        }
        let batch = WriteBatch { rep: data, owner: HandleOwner::None };
        for op in batch.iter() {
            op?;
        }
        // Every operation gets its own sequence number, all within 56 bits.
        let last = batch.sequence().checked_add(u64::from(batch.count()));
        if last.is_none_or(|l| l > crate::key::MAX_SEQ + 1) {
            return Err(Error::corruption(format!(
                "write batch sequence {} + {} operations exceeds the 56-bit maximum",
                batch.sequence(),
                batch.count()
            )));
        }
        Ok(batch)
    }

    /// Iterates over the operations in order.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            reader: Reader::new(self.rep.get(HEADER_LEN..).unwrap_or_default()),
            remaining: self.count(),
            failed: false,
        }
    }

    /// Where the next op's record will start (for an index of the ops).
    pub(crate) fn end_offset(&self) -> usize {
        self.rep.len()
    }

    /// The op whose record starts at `offset` (an [`Self::end_offset`] taken
    /// before it was added).
    pub(crate) fn op_at(&self, offset: usize) -> Result<BatchOp<'_>> {
        let rest = self.rep.get(offset..).filter(|_| offset >= HEADER_LEN);
        let rest = rest.ok_or_else(|| Error::invalid("no batch record at this offset"))?;
        BatchIter { reader: Reader::new(rest), remaining: 1, failed: false }.decode()
    }

    /// Where the batch ends now, to cut it back to with [`Self::truncate`].
    pub(crate) fn mark(&self) -> BatchMark {
        BatchMark { len: self.rep.len(), count: self.count(), owner: self.owner }
    }

    /// Drops every op added after `mark` was taken.
    pub(crate) fn truncate(&mut self, mark: BatchMark) {
        self.rep.truncate(mark.len.max(HEADER_LEN));
        self.set_count(mark.count);
        self.owner = mark.owner;
    }

    fn count(&self) -> u32 {
        self.rep.get(8..).and_then(decode_fixed32).unwrap_or(0)
    }

    fn set_count(&mut self, n: u32) {
        self.rep[8..HEADER_LEN].copy_from_slice(&n.to_le_bytes());
    }
}

impl<'a> IntoIterator for &'a WriteBatch {
    type Item = Result<BatchOp<'a>>;
    type IntoIter = BatchIter<'a>;
    fn into_iter(self) -> BatchIter<'a> {
        self.iter()
    }
}

/// Iterator over a batch's operations; yields one error and stops on a malformed batch.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    reader: Reader<'a>,
    remaining: u32,
    failed: bool,
}

impl<'a> BatchIter<'a> {
    fn decode(&mut self) -> Result<BatchOp<'a>> {
        let r = &mut self.reader;
        let mut first = r.u8().ok_or_else(|| truncated("kind"))?;
        let mut keyspace = 0;
        if first == KEYSPACE_PREFIX {
            keyspace = r.varint32().filter(|&id| id != 0).ok_or_else(|| truncated("keyspace id"))?;
            first = r.u8().ok_or_else(|| truncated("kind"))?;
        }
        let kind = match first {
            3 => ValueKind::RangeDelete,
            b => ValueKind::from_u8(b)?,
        };
        let key = r.length_prefixed().ok_or_else(|| truncated("key"))?;
        let value = match kind {
            ValueKind::Put | ValueKind::Merge | ValueKind::RangeDelete => {
                r.length_prefixed().ok_or_else(|| truncated("value"))?
            }
            ValueKind::Delete => &[],
        };
        Ok(BatchOp { kind, key, value, keyspace })
    }
}

fn truncated(what: &str) -> Error {
    Error::corruption(format!("write batch truncated in a record's {what}"))
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<BatchOp<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.remaining == 0 {
            if self.reader.is_empty() {
                return None;
            }
            self.failed = true;
            let extra = self.reader.remaining().len();
            return Some(Err(Error::corruption(format!(
                "write batch has {extra} bytes after its last record"
            ))));
        }
        self.remaining -= 1;
        let op = self.decode();
        self.failed = op.is_err();
        Some(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn collect(b: &WriteBatch) -> Vec<(ValueKind, Vec<u8>, Vec<u8>)> {
        b.iter()
            .map(|op| op.map(|o| (o.kind, o.key.to_vec(), o.value.to_vec())))
            .collect::<Result<_>>()
            .unwrap()
    }

    #[test]
    fn build_iterate_and_round_trip() {
        let mut b = WriteBatch::new();
        assert!(b.is_empty());
        assert_eq!(b.size_in_bytes(), HEADER_LEN);
        b.put("k1", "v1");
        b.delete(b"k2");
        b.put(b"", vec![7u8; 300]);
        b.merge("k1", "+1");
        b.delete_range("a", "c");
        b.set_sequence(42);
        assert_eq!((b.len(), b.sequence()), (5, 42));
        let ops = collect(&b);
        assert_eq!(ops[0], (ValueKind::Put, b"k1".to_vec(), b"v1".to_vec()));
        assert_eq!(ops[1], (ValueKind::Delete, b"k2".to_vec(), vec![]));
        assert_eq!(ops[2], (ValueKind::Put, vec![], vec![7u8; 300]));
        assert_eq!(ops[3], (ValueKind::Merge, b"k1".to_vec(), b"+1".to_vec()));
        assert_eq!(ops[4], (ValueKind::RangeDelete, b"a".to_vec(), b"c".to_vec()));

        let copy = WriteBatch::from_data(b.data().to_vec()).unwrap();
        assert_eq!(copy, b);

        let mut c = WriteBatch::new();
        c.delete("x");
        let mut joined = b.clone();
        joined.append(&c);
        assert_eq!(joined.len(), 6);
        assert_eq!(joined.sequence(), 42);
        assert_eq!(collect(&joined)[5], (ValueKind::Delete, b"x".to_vec(), vec![]));
        assert_eq!(joined.size_in_bytes(), b.size_in_bytes() + c.size_in_bytes() - HEADER_LEN);

        joined.clear();
        assert_eq!(joined, WriteBatch::default());
        assert_eq!(joined.iter().count(), 0);
    }

    #[test]
    fn malformed_batches_are_corruption() {
        let mut b = WriteBatch::new();
        b.put("key", "value");
        b.delete("gone");
        let good = b.data().to_vec();
        let bad = |bytes: Vec<u8>| WriteBatch::from_data(bytes).unwrap_err().is_corruption();
        assert!(bad(good[..11].to_vec()));
        assert!(bad(good[..good.len() - 1].to_vec()));
        assert!(bad([&good[..], b"x"].concat()));
        let mut wrong_count = good.clone();
        wrong_count[8] = 3;
        assert!(bad(wrong_count));
        let mut unknown_kind = good.clone();
        unknown_kind[12] = 9;
        assert!(bad(unknown_kind));
        let mut huge_len = good;
        huge_len[13] = 0xff;
        assert!(bad(huge_len));
    }

    #[test]
    fn every_damage_to_the_bytes_is_handled_without_panic() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut b = WriteBatch::new();
        for i in 0..20u32 {
            let key: Vec<u8> = (0..rng.gen_range(0..20)).map(|_| rng.gen()).collect();
            if rng.gen_bool(0.1) {
                b.delete_range(&key, [&key[..], b"z"].concat());
            } else if rng.gen_bool(0.3) {
                b.delete(&key);
            } else {
                b.put(&key, vec![i as u8; rng.gen_range(0..200)]);
            }
        }
        b.set_sequence(u64::MAX);
        assert!(
            WriteBatch::from_data(b.data().to_vec()).unwrap_err().is_corruption(),
            "sequence past 56 bits"
        );
        b.set_sequence(crate::key::MAX_SEQ - 19);
        let good = b.data().to_vec();
        assert_eq!(WriteBatch::from_data(good.clone()).unwrap(), b);
        for i in 0..good.len() {
            for xor in [0x01, 0x80, 0xff] {
                let mut d = good.clone();
                d[i] ^= xor;
                if let Ok(parsed) = WriteBatch::from_data(d) {
                    // Accepted: then it must iterate cleanly and consistently.
                    assert_eq!(parsed.iter().filter(|op| op.is_ok()).count(), parsed.len());
                }
            }
            let _ = WriteBatch::from_data(good[..i].to_vec());
        }
        for _ in 0..200 {
            let junk: Vec<u8> = (0..rng.gen_range(0..64)).map(|_| rng.gen()).collect();
            if let Ok(parsed) = WriteBatch::from_data(junk) {
                assert!(parsed.iter().all(|op| op.is_ok()));
            }
        }
    }
}
