//! Merge operators the engine ships under stable names, so a database that
//! uses one opens by name alone ([`Options::load_latest`], the `strata`
//! tool); and a stand-in that reads a database whose operator is not
//! available, returning each key's operands unmerged.
//!
//! [`Options::load_latest`]: crate::Options::load_latest

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::merge_operator::MergeOperator;
use crate::options::{KeyspaceOptions, Options};
use crate::version::VersionSet;

/// The name of [`UInt64Add`].
pub const UINT64_ADD: &str = "strata.UInt64Add";
/// The name of [`Max`].
pub const MAX: &str = "strata.Max";
/// The name of a [`StringAppend`] is this prefix followed by its separator.
pub const STRING_APPEND_PREFIX: &str = "strata.StringAppend.";

/// Adds 8-byte little-endian unsigned counters, wrapping on overflow
/// (RocksDB's `uint64add`), named [`UINT64_ADD`]. A missing value counts
/// as 0. An existing value or operand that is not 8 bytes fails the merge
/// (a read of the key is [`Error::Corruption`](crate::Error::Corruption)),
/// where RocksDB logs it and counts it as 0.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use strata::merge_operators::UInt64Add;
/// use strata::{Db, MemVfs, Options};
///
/// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())).with_merge_operator(Arc::new(UInt64Add)))?;
/// db.merge("hits", 2u64.to_le_bytes())?;
/// db.merge("hits", 3u64.to_le_bytes())?;
/// assert_eq!(db.get("hits")?, Some(5u64.to_le_bytes().to_vec()));
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct UInt64Add;

fn u64_le(v: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(v.try_into().ok()?))
}

impl MergeOperator for UInt64Add {
    fn name(&self) -> &str {
        UINT64_ADD
    }

    fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        let mut sum = existing.map_or(Some(0), u64_le)?;
        for op in operands {
            sum = sum.wrapping_add(u64_le(op)?);
        }
        Some(sum.to_le_bytes().to_vec())
    }

    fn partial_merge(&self, _key: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
        Some(u64_le(left)?.wrapping_add(u64_le(right)?).to_le_bytes().to_vec())
    }
}

/// Appends each operand to the value with a separator between them
/// (RocksDB's `stringappend`, whose default separator is `,`). Its name is
/// [`STRING_APPEND_PREFIX`] followed by the separator, e.g.
/// `strata.StringAppend.,`, so the name alone rebuilds it.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use strata::merge_operators::StringAppend;
/// use strata::{Db, MemVfs, MergeOperator, Options};
///
/// let op = StringAppend::default();
/// assert_eq!(op.name(), "strata.StringAppend.,");
/// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())).with_merge_operator(Arc::new(op)))?;
/// db.put("tags", "a")?;
/// db.merge("tags", "b")?;
/// db.merge("tags", "c")?;
/// assert_eq!(db.get("tags")?, Some(b"a,b,c".to_vec()));
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct StringAppend {
    name: String,
    separator: Vec<u8>,
}

impl StringAppend {
    /// Appends with `separator` between values (empty: none).
    pub fn new(separator: &str) -> StringAppend {
        StringAppend {
            name: format!("{STRING_APPEND_PREFIX}{separator}"),
            separator: separator.as_bytes().to_vec(),
        }
    }
}

impl Default for StringAppend {
    /// Separated by `,`, as RocksDB's default.
    fn default() -> StringAppend {
        StringAppend::new(",")
    }
}

impl MergeOperator for StringAppend {
    fn name(&self) -> &str {
        &self.name
    }

    fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        let mut parts = existing.into_iter().chain(operands.iter().copied());
        let mut out = parts.next().unwrap_or_default().to_vec();
        for p in parts {
            out.extend_from_slice(&self.separator);
            out.extend_from_slice(p);
        }
        Some(out)
    }

    fn partial_merge(&self, key: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
        self.full_merge(key, Some(left), &[right])
    }
}

/// Keeps the bytewise greatest of the value and the operands, named [`MAX`].
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use strata::merge_operators::Max;
/// use strata::{Db, MemVfs, Options};
///
/// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())).with_merge_operator(Arc::new(Max)))?;
/// db.merge("high", "b")?;
/// db.merge("high", "c")?;
/// db.merge("high", "a")?;
/// assert_eq!(db.get("high")?, Some(b"c".to_vec()));
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;

impl MergeOperator for Max {
    fn name(&self) -> &str {
        MAX
    }

    fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        Some(existing.into_iter().chain(operands.iter().copied()).max().unwrap_or_default().to_vec())
    }

    fn partial_merge(&self, _key: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
        Some(left.max(right).to_vec())
    }
}

/// The shipped operator named `name` ([`UINT64_ADD`], [`MAX`],
/// [`STRING_APPEND_PREFIX`] + separator), if there is one.
///
/// # Examples
///
/// ```
/// use strata::merge_operators::builtin_merge_operator;
///
/// assert_eq!(builtin_merge_operator("strata.StringAppend.;").unwrap().name(), "strata.StringAppend.;");
/// assert!(builtin_merge_operator("strata.UInt64Add").is_some());
/// assert!(builtin_merge_operator("my.op").is_none());
/// ```
pub fn builtin_merge_operator(name: &str) -> Option<Arc<dyn MergeOperator>> {
    match name {
        UINT64_ADD => Some(Arc::new(UInt64Add)),
        MAX => Some(Arc::new(Max)),
        _ => name.strip_prefix(STRING_APPEND_PREFIX).map(|sep| Arc::new(StringAppend::new(sep)) as _),
    }
}

/// The merge operator each keyspace of the database at `path` records
/// (keyspace name, operator name), `"default"` first; keyspaces without
/// one are left out. Reads the root MANIFEST, writes nothing.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use strata::merge_operators::{recorded_merge_operators, Max};
/// use strata::{Db, MemVfs, Options};
///
/// let opts = Options::default().with_vfs(Arc::new(MemVfs::new()));
/// Db::open("/db", opts.clone().with_merge_operator(Arc::new(Max)))?.close()?;
/// assert_eq!(recorded_merge_operators("/db", &opts)?, [("default".to_string(), "strata.Max".to_string())]);
/// # Ok::<(), strata::Error>(())
/// ```
pub fn recorded_merge_operators(path: impl AsRef<Path>, opts: &Options) -> Result<Vec<(String, String)>> {
    let versions = VersionSet::load_read_only(opts.vfs.clone(), path.as_ref(), 64, |_, _| Ok(()))?;
    let name_of = |bytes: &[u8]| -> Result<Option<String>> {
        Ok(KeyspaceOptions::decode(bytes)?.0.merge_operator_name().map(str::to_string))
    };
    let mut out = Vec::new();
    if let Some(bytes) = versions.default_options() {
        if let Some(op) = name_of(&bytes)? {
            out.push(("default".to_string(), op));
        }
    }
    for entry in versions.keyspaces().into_values() {
        if let Some(op) = name_of(&entry.options)? {
            out.push((entry.name, op));
        }
    }
    Ok(out)
}

/// Marks what [`unmerged_stand_in`] returns for a key with operands.
const UNMERGED_MAGIC: &[u8] = b"\x00strata:unmerged-operands\x00";

/// Stands in for a merge operator that is not available: it has the
/// missing operator's `name` (so a database recorded with it opens), never
/// merges (a compaction or flush keeps every operand as it is), and makes a
/// read of a key with operands return them unmerged, encoded: decode the
/// value with [`MergeOperands::decode`]. A value that is not such an
/// encoding (a key without operands) decodes to `None`; a stored value that
/// happens to be one is indistinguishable (the marker makes that
/// unlikely). Meant for inspecting a database (the `strata` tool uses it
/// for its reading commands).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use strata::merge_operators::{unmerged_stand_in, MergeOperands};
/// use strata::{associative_merge_operator, Db, MemVfs, Options};
///
/// let concat = associative_merge_operator("my.concat", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
/// let opts = Options::default().with_vfs(Arc::new(MemVfs::new()));
/// let db = Db::open("/db", opts.clone().with_merge_operator(concat))?;
/// db.put("k", "a")?;
/// db.merge("k", "b")?;
/// db.put("plain", "v")?;
/// db.close()?;
///
/// let db = Db::open_read_only("/db", opts.with_merge_operator(unmerged_stand_in("my.concat")))?;
/// let got = MergeOperands::decode(&db.get("k")?.unwrap()).unwrap();
/// assert_eq!(got, MergeOperands { base: Some(b"a".to_vec()), operands: vec![b"b".to_vec()] });
/// assert_eq!(MergeOperands::decode(&db.get("plain")?.unwrap()), None);
/// # Ok::<(), strata::Error>(())
/// ```
pub fn unmerged_stand_in(name: &str) -> Arc<dyn MergeOperator> {
    Arc::new(StandIn { name: name.to_string() })
}

struct StandIn {
    name: String,
}

impl MergeOperator for StandIn {
    fn name(&self) -> &str {
        &self.name
    }

    /// Never merges: a compaction keeps the operands (reads encode them,
    /// see `merge_operator::full_merge`).
    fn full_merge(&self, _key: &[u8], _existing: Option<&[u8]>, _operands: &[&[u8]]) -> Option<Vec<u8>> {
        None
    }

    fn unmerged(&self, existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        Some(MergeOperands::encode(existing, operands))
    }
}

/// A key's versions as [`unmerged_stand_in`] returns them: the put below
/// the operands (none after a delete or when there is none) and the
/// operands, oldest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeOperands {
    /// The value the operands apply to.
    pub base: Option<Vec<u8>>,
    /// The operands, oldest first.
    pub operands: Vec<Vec<u8>>,
}

impl MergeOperands {
    pub(crate) fn encode(base: Option<&[u8]>, operands: &[&[u8]]) -> Vec<u8> {
        let mut out = UNMERGED_MAGIC.to_vec();
        out.push(u8::from(base.is_some()));
        for part in base.into_iter().chain(operands.iter().copied()) {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
        out
    }

    /// The operands in `value`, if it is what [`unmerged_stand_in`] returns
    /// for a key with operands.
    pub fn decode(value: &[u8]) -> Option<MergeOperands> {
        let rest = value.strip_prefix(UNMERGED_MAGIC)?;
        let (&has_base, mut rest) = rest.split_first()?;
        let mut parts = Vec::new();
        while !rest.is_empty() {
            let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
            parts.push(rest.get(4..4 + len)?.to_vec());
            rest = &rest[4 + len..];
        }
        let base = match has_base {
            0 => None,
            1 if !parts.is_empty() => Some(parts.remove(0)),
            _ => return None,
        };
        Some(MergeOperands { base, operands: parts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_operators_merge_and_partially_merge() {
        let n = |v: u64| v.to_le_bytes().to_vec();
        let add = UInt64Add;
        assert_eq!(add.full_merge(b"k", None, &[&n(2), &n(3)]), Some(n(5)));
        assert_eq!(add.full_merge(b"k", Some(&n(u64::MAX)), &[&n(2)]), Some(n(1)), "wraps");
        assert_eq!(add.full_merge(b"k", Some(b"bad"), &[&n(2)]), None);
        assert_eq!(add.partial_merge(b"k", &n(2), &n(3)), Some(n(5)));
        let app = StringAppend::new("--");
        assert_eq!(app.full_merge(b"k", None, &[b"a", b"b"]), Some(b"a--b".to_vec()));
        assert_eq!(app.full_merge(b"k", Some(b"x"), &[b"a"]), Some(b"x--a".to_vec()));
        assert_eq!(app.partial_merge(b"k", b"a", b"b"), Some(b"a--b".to_vec()));
        assert_eq!(Max.full_merge(b"k", Some(b"b"), &[b"c", b"a"]), Some(b"c".to_vec()));
        assert_eq!(Max.partial_merge(b"k", b"b", b"a"), Some(b"b".to_vec()));
        for name in
            [UINT64_ADD, MAX, "strata.StringAppend.,", "strata.StringAppend.", "strata.StringAppend.\n"]
        {
            assert_eq!(builtin_merge_operator(name).map(|o| o.name().to_string()).as_deref(), Some(name));
        }
        assert!(builtin_merge_operator("strata.Nope").is_none());
    }

    #[test]
    fn operands_encode_and_decode() {
        for (base, ops) in
            [(None, vec![&b"a"[..], b""]), (Some(&b"v"[..]), vec![&b"x"[..]]), (Some(&b""[..]), vec![])]
        {
            let enc = MergeOperands::encode(base, &ops);
            let want = MergeOperands {
                base: base.map(<[u8]>::to_vec),
                operands: ops.iter().map(|o| o.to_vec()).collect(),
            };
            assert_eq!(MergeOperands::decode(&enc), Some(want));
            assert_eq!(MergeOperands::decode(&enc[..enc.len() - 1]), None, "truncated");
        }
        assert_eq!(MergeOperands::decode(b"plain value"), None);
    }
}
