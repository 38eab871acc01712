//! dump-table, dump-manifest and dump-wal: the engine's files, human-readable.

use std::path::Path;
use std::sync::Arc;

use strata::filename::{manifest_path, parse_file_name, FileKind};
use strata::iter::InternalIterator;
use strata::key::parse_internal_key;
use strata::table::filter::{num_probes, BloomFilter};
use strata::table::filter_patch::FilterPatch;
use strata::table::format::{read_block_contents, BlockHandle, Footer, FOOTER_LEN};
use strata::table::{decode_range_dels, discover_segments, Block, BlockReadOptions, Table, TableProperties};
use strata::version::{read_current, read_manifest, KeyspaceOp, VersionEdit, VersionSet};
use strata::vfs::{RandomAccessFile, RandomOpenOptions};
use strata::wal::LogReader;
use strata::{RealVfs, Vfs, WalRecoveryMode, WriteBatch};

use crate::bytes::show;
use crate::CliResult;

fn err(e: strata::Error) -> String {
    e.to_string()
}

/// An internal key as `user_key @ seq kind` (or the raw bytes if it does not parse).
pub fn ikey(k: &[u8], hex: bool) -> String {
    match parse_internal_key(k) {
        Ok(p) => format!("{} @ {} {:?}", show(p.user_key, hex), p.seq, p.kind),
        Err(_) => format!("<bad internal key {}>", show(k, true)),
    }
}

/// The file number in a name like `000012.sst` (0 if it has none).
pub fn file_number(path: &Path) -> u64 {
    match path.file_name().and_then(|n| n.to_str()).and_then(parse_file_name) {
        Some(FileKind::Table(n) | FileKind::Wal(n) | FileKind::Manifest(n) | FileKind::Temp(n)) => n,
        _ => 0,
    }
}

/// Opens a table file on its own: its segments found from its bytes.
pub fn open_table(path: &Path) -> CliResult<(Arc<Table>, Arc<dyn RandomAccessFile>)> {
    let vfs = RealVfs::new();
    let file = vfs
        .open_random(path, RandomOpenOptions::default())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let id = file_number(path);
    let (segs, len) =
        discover_segments(&*file, id, file.len()).map_err(|e| format!("{}: {e}", path.display()))?;
    let table = Table::open_segments(Arc::clone(&file), id, len, &segs, None)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((Arc::new(table), file))
}

fn print_props(p: &TableProperties, hex: bool) {
    println!("  entries          {} ({} deletions)", p.num_entries, p.num_deletions);
    println!("  data blocks      {}", p.num_data_blocks);
    println!("  raw key bytes    {}", p.raw_key_bytes);
    println!("  raw value bytes  {}", p.raw_value_bytes);
    println!("  compression      {:?}", p.compression);
    println!("  bloom bits/key   {}", p.bloom_bits_per_key);
    println!("  whole-key filter {}", p.whole_key_filtering);
    println!("  prefix extractor {}", p.prefix_extractor.as_deref().unwrap_or("none"));
    if !p.smallest.is_empty() {
        println!("  smallest         {}", ikey(&p.smallest, hex));
        println!("  largest          {}", ikey(&p.largest, hex));
    }
    if let Some(h) = p.range_del {
        println!("  range-del block  offset {} size {}", h.offset, h.size);
    }
}

fn handle(h: BlockHandle) -> String {
    format!("offset {} size {}", h.offset, h.size)
}

/// `dump-table FILE`: properties, each segment's blocks and filter, and with
/// `entries` every entry.
pub fn table(path: &Path, entries: bool, hex: bool) -> CliResult<()> {
    let (table, file) = open_table(path)?;
    let id = table.file_id();
    println!("table {} ({} bytes, {} segment(s))", path.display(), table.file_size(), table.num_segments());
    println!("properties:");
    print_props(table.properties(), hex);
    let (segs, len) = discover_segments(&*file, id, file.len()).map_err(err)?;
    let ends: Vec<u64> = if segs.is_empty() { vec![len] } else { segs.iter().map(|s| s.end).collect() };
    let mut start = 0;
    for (i, end) in ends.into_iter().enumerate() {
        println!("segment {i}: bytes {start}..{end}");
        // A segment that ends in a filter patch (Monkey): its own footer is at the patch's table end.
        let tail = file.read_at(end - FOOTER_LEN as u64, FOOTER_LEN).map_err(err)?;
        let patch = if FilterPatch::is_patch(&tail) {
            let p = FilterPatch::decode(&tail, end).map_err(err)?;
            println!(
                "  filter patch     footer offset {}, the table ends at {}",
                end - FOOTER_LEN as u64,
                p.table_end
            );
            Some(p)
        } else {
            None
        };
        let own_end = patch.map_or(end, |p| p.table_end);
        let footer_at = own_end - FOOTER_LEN as u64;
        let footer =
            Footer::decode(&file.read_at(footer_at, FOOTER_LEN).map_err(err)?, own_end).map_err(err)?;
        println!("  footer           offset {footer_at}");
        println!("  index block      {}", handle(footer.index));
        println!("  properties block {}", handle(footer.properties));
        let props =
            TableProperties::decode(&read_block_contents(&*file, footer.properties, true).map_err(err)?)
                .map_err(err)?;
        let filters = [(
            footer.filter,
            props.bloom_bits_per_key,
            if patch.is_some() { "filter (replaced)" } else { "filter block    " },
        )]
        .into_iter()
        .chain(patch.map(|p| (p.filter, p.bits_per_key, "patched filter  ")));
        for (h, bits, what) in filters {
            if h.size == 0 {
                println!("  filter           none");
                continue;
            }
            let f = BloomFilter::new(read_block_contents(&*file, h, true).map_err(err)?).map_err(err)?;
            println!(
                "  {what} {} ({} bytes in memory, {} bits/key, {} probes, {:.3}% expected false positives)",
                handle(h),
                f.memory_size(),
                bits,
                num_probes(bits),
                100.0 * expected_fp(bits),
            );
        }
        if let Some(h) = props.range_del {
            let tombs =
                decode_range_dels(&read_block_contents(&*file, h, true).map_err(err)?).map_err(err)?;
            println!("  range-del block  {} ({} tombstones)", handle(h), tombs.len());
            for (start, end, seq) in tombs {
                println!("    [{}, {}) @ {seq}", show(&start, hex), show(&end, hex));
            }
        }
        let index =
            Arc::new(Block::new(read_block_contents(&*file, footer.index, true).map_err(err)?).map_err(err)?);
        let mut it = index.iter();
        it.seek_to_first().map_err(err)?;
        let mut n = 0;
        while it.valid() {
            let h = BlockHandle::decode(it.value()).map_err(err)?;
            println!("  data block {n:<5}  {}  last key {}", handle(h), ikey(it.key(), hex));
            n += 1;
            it.next().map_err(err)?;
        }
        start = end;
    }
    if entries {
        println!("entries:");
        let opts = BlockReadOptions::verified();
        let mut it = table.iter(opts);
        it.seek_to_first().map_err(err)?;
        while it.valid() {
            println!("  {} => {}", ikey(it.key(), hex), show(it.value(), hex));
            it.next().map_err(err)?;
        }
    }
    Ok(())
}

/// A bloom filter's false-positive rate at `bits` per key with its probe count.
fn expected_fp(bits: f64) -> f64 {
    if bits <= 0.0 {
        return 1.0;
    }
    let k = f64::from(num_probes(bits));
    (1.0 - (-k / bits).exp()).powf(k)
}

fn print_edit(i: u64, e: &VersionEdit, hex: bool) {
    println!("edit {i}:");
    if let Some(n) = e.log_number {
        println!("  log number       {n}");
    }
    if let Some(n) = e.next_file_number {
        println!("  next file number {n}");
    }
    if let Some(n) = e.last_sequence {
        println!("  last sequence    {n}");
    }
    if let Some(n) = e.next_keyspace_id {
        println!("  next keyspace id {n}");
    }
    for (level, run, id) in &e.deleted_files {
        println!("  delete file      L{level} run {run} #{id}");
    }
    for (level, run, f) in &e.new_files {
        println!(
            "  add file         L{level} run {run} #{} {} bytes, {} entries ({} deletions, {} range deletes), seq {}..{}, {} .. {}{}",
            f.id,
            f.size,
            f.num_entries,
            f.num_deletions,
            f.num_range_dels,
            f.smallest_seq,
            f.largest_seq,
            ikey(&f.smallest, hex),
            ikey(&f.largest, hex),
            if f.segments.is_empty() { String::new() } else { format!(", {} segments", f.segments.len()) }
        );
    }
    for (level, key) in &e.compact_pointers {
        println!("  compact pointer  L{level} {}", show(key, hex));
    }
    if let Some(s) = &e.policy_state {
        println!("  policy state     {} bytes", s.len());
    }
    for op in &e.buffer_ops {
        println!("  buffer op        {op:?}");
    }
    for op in &e.keyspace_ops {
        match op {
            KeyspaceOp::Add { id, name, options } => {
                println!("  add keyspace     {id} {name:?} ({} bytes of options)", options.len())
            }
            KeyspaceOp::Drop { id } => println!("  drop keyspace    {id}"),
            KeyspaceOp::SetOptions { id, options } => {
                println!("  keyspace options {id} ({} bytes)", options.len())
            }
        }
    }
}

/// `dump-manifest`: every edit of the MANIFEST `dir/CURRENT` names, then the
/// levels they lead to; for the root, the same for every keyspace.
pub fn manifest(dir: &Path, hex: bool) -> CliResult<()> {
    let vfs: Arc<dyn Vfs> = Arc::new(RealVfs::new());
    if !dir.is_dir() {
        return Err(format!("no database at {}: not a directory", dir.display()));
    }
    let number = read_current(&*vfs, dir).map_err(err)?;
    let path = manifest_path(dir, number);
    println!("{} (CURRENT)", path.display());
    let mut i = 0;
    read_manifest(&*vfs, &path, |e| {
        print_edit(i, &e, hex);
        i += 1;
        Ok(())
    })
    .map_err(err)?;
    let set = VersionSet::load_read_only(Arc::clone(&vfs), dir, 64, |_, _| Ok(())).map_err(err)?;
    println!("state: last sequence {}, log number {}", set.last_sequence(), set.log_number());
    let v = set.current();
    let in_no_run = v.buffer_bytes_in_no_run();
    for (l, level) in v.levels.iter().enumerate() {
        if level.runs.is_empty() && level.buffers.is_empty() {
            continue;
        }
        println!("L{l}: {} files, {} bytes", level.num_files(), level.size_bytes());
        for run in &level.runs {
            println!("  run {}:", run.id);
            for f in &run.files {
                println!(
                    "    #{} {} bytes, {} entries, {} .. {}",
                    f.id,
                    f.size,
                    f.num_entries,
                    ikey(&f.smallest, hex),
                    ikey(&f.largest, hex)
                );
            }
        }
        for b in &level.buffers {
            println!("  buffer of run {}: {} bytes", b.run, b.bytes());
        }
        if !level.buffers.is_empty() {
            println!("  buffers: {} bytes in files no run lists", in_no_run[l]);
        }
    }
    for (id, entry) in set.keyspaces() {
        println!();
        println!("keyspace {id} {:?}:", entry.name);
        manifest(&dir.join("keyspaces").join(id.to_string()), hex)?;
    }
    Ok(())
}

/// `dump-wal FILE`: each record's batch.
pub fn wal(path: &Path, hex: bool) -> CliResult<()> {
    let vfs = RealVfs::new();
    let file = vfs.open_sequential(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = LogReader::new(file, WalRecoveryMode::AbsoluteConsistency);
    let mut i = 0u64;
    while let Some(rec) = reader.read_record().map_err(|e| format!("{}: record {i}: {e}", path.display()))? {
        let batch = WriteBatch::from_data(rec).map_err(|e| format!("{}: record {i}: {e}", path.display()))?;
        println!("record {i}: sequence {}, {} ops", batch.sequence(), batch.len());
        for op in batch.iter() {
            let op = op.map_err(|e| format!("{}: record {i}: {e}", path.display()))?;
            println!(
                "  {:?} keyspace {} {} => {}",
                op.kind,
                op.keyspace,
                show(op.key, hex),
                show(op.value, hex)
            );
        }
        i += 1;
    }
    println!("{i} records");
    Ok(())
}
