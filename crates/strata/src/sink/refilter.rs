//! A table's filter rebuilt at other bits per key, its data untouched
//! (`table::filter_patch` describes the layout): the table's keys are read
//! once, the new filter is appended after the table with a patch footer, and
//! the grown file is read back before the edit names it.
//!
//! Durability as for an appended segment (`append.rs`): the patch is synced
//! before the MANIFEST edit records the file's new length; until then the
//! bytes past the recorded length are not part of the table. The file is cut
//! back to its recorded length first (an earlier attempt may have failed
//! after writing), and a file hard-linked into a checkpoint or backup is
//! first replaced by a private copy.

use super::append::open_at_recorded_end;
use super::verify::read_back;
use super::Env;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::user_key;
use crate::table::filter::FilterFeed;
use crate::table::filter_patch::append_patch;
use crate::table::{BlockReadOptions, Expected};
use crate::version::{FileMeta, NewFile};

/// Rebuilds the filter of `meta` (a table of one segment that has a filter)
/// at `bits_per_key` and returns the file as the edit will list it: longer by
/// the patch, with the new bits.
pub(crate) fn rebuild_filter(env: &Env<'_>, meta: &FileMeta, bits_per_key: f64) -> Result<NewFile> {
    if !meta.segments.is_empty() {
        return Err(Error::invalid(format!(
            "table {:06}: a filter is rebuilt only in a table of one segment",
            meta.id
        )));
    }
    if !(bits_per_key > 0.0 && bits_per_key.is_finite()) {
        return Err(Error::invalid(format!("filter rebuild at {bits_per_key} bits per key")));
    }
    let table = env.tables.get(meta.id, meta.size, &[])?;
    let props = table.properties();
    let seg = table.segments().first().ok_or_else(|| Error::corruption("table without a segment"))?;
    if seg.filter.is_none() {
        return Err(Error::invalid(format!("table {:06} has no filter to rebuild", meta.id)));
    }
    // A table patched before keeps its end; the newer patch follows the older.
    let table_end = seg.end;
    // The prefixes are kept only where this tree still has the extractor the
    // table's filter was built with; otherwise the new filter holds whole
    // keys only and prefix probes read the table (never a false negative).
    let prefix =
        (env.opts.prefix_extractor.clone()).filter(|p| props.prefix_extractor.as_deref() == Some(p.name()));
    let has_prefixes = prefix.is_some();
    let mut feed = FilterFeed::new(bits_per_key, true, prefix);
    let mut it = table.iter(BlockReadOptions {
        readahead: env.opts.compaction_readahead_size,
        ..BlockReadOptions::verified()
    });
    it.seek_to_first()?;
    let mut last: Option<Vec<u8>> = None;
    while it.valid() {
        let uk = user_key(it.key());
        if last.as_deref() != Some(uk) {
            feed.add(uk);
            last = Some(uk.to_vec());
        }
        it.next()?;
    }
    let payload = feed.finish();
    let mut file = open_at_recorded_end(env, meta)?;
    let size = append_patch(&mut *file, table_end, &payload, bits_per_key, has_prefixes)?;
    drop(file);
    let nf = NewFile { size, bloom_bits_per_key: Some(bits_per_key), ..meta.to_new_file() };
    let expect = Expected { entries: Some(nf.num_entries), bounds: None };
    read_back(env, nf.id, nf.size, &nf.segments, &expect).map_err(|e| {
        // A handle opened on the new length describes bytes no Version lists.
        env.tables.evict(nf.id);
        Error::corruption(format!("table {:06}.sst failed verification after a filter rebuild: {e}", nf.id))
    })?;
    Ok(nf)
}
