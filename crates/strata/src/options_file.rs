//! The `OPTIONS-NNNNNN` file (RocksDB's `OPTIONS-000007`): the options the
//! database last opened with, as INI-like text for people and tools, the
//! database-wide compatibility check made at open, and
//! [`Options::load_latest`].
//!
//! The writer and parser are hand-written: the grammar is part of the
//! product's on-disk format (docs/FORMAT.md), so it must not change with a
//! serialization library's choices. The MANIFEST stays the engine's source of
//! truth for per-tree options; this file is never needed to open a database.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::keyspace_options::KeyspaceOptions;
use crate::options::{
    BloomAllocation, CompactionPipeline, CompactionStyle, CompressionType, Options, WalRecoveryMode,
};
use crate::prefix::FixedPrefix;
use crate::vfs::{RealVfs, Vfs};

/// The grammar version this build writes and the newest it reads.
pub(crate) const OPTIONS_FILE_VERSION: u64 = 1;
/// The only comparator Strata has (RocksDB's name for it).
pub(crate) const COMPARATOR: &str = "leveldb.BytewiseComparator";
/// OPTIONS files kept after a new one is written (RocksDB keeps two).
const KEEP: usize = 2;
const PREFIX: &str = "OPTIONS-";
const TEMP_SUFFIX: &str = ".dbtmp";

/// `OPTIONS-NNNNNN`.
pub(crate) fn file_name(number: u64) -> String {
    format!("{PREFIX}{number:06}")
}

/// The number of an `OPTIONS-NNNNNN` name (not of its `.dbtmp`).
pub(crate) fn parse_name(name: &str) -> Option<u64> {
    let n = name.strip_prefix(PREFIX)?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

/// Whether `name` is an OPTIONS file or a temporary one being written.
pub(crate) fn is_options_file(name: &str) -> bool {
    parse_name(name.strip_suffix(TEMP_SUFFIX).unwrap_or(name)).is_some()
}

/// The OPTIONS files in `dir`, oldest first.
fn list(vfs: &dyn Vfs, dir: &Path) -> Result<Vec<u64>> {
    let mut numbers: Vec<u64> = vfs.list_dir(dir)?.iter().filter_map(|n| parse_name(n)).collect();
    numbers.sort_unstable();
    Ok(numbers)
}

/// The newest OPTIONS file in `dir`, if any.
pub(crate) fn newest(vfs: &dyn Vfs, dir: &Path) -> Result<Option<PathBuf>> {
    Ok(list(vfs, dir)?.last().map(|&n| dir.join(file_name(n))))
}

/// Removes `OPTIONS-*.dbtmp` files a crash left behind (the removals are
/// best effort; a directory that cannot be listed is an error).
pub(crate) fn remove_temps(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    for name in vfs.list_dir(dir)? {
        if name.strip_suffix(TEMP_SUFFIX).and_then(parse_name).is_some() {
            let _ = vfs.remove_file(&dir.join(name));
        }
    }
    Ok(())
}

/// Writes a new OPTIONS file for `trees` (name and options of each keyspace,
/// `default` first): to `OPTIONS-n.dbtmp`, synced, renamed, the directory
/// synced; then all but the newest [`KEEP`] are deleted.
pub(crate) fn write(vfs: &dyn Vfs, dir: &Path, trees: &[(String, Options)]) -> Result<PathBuf> {
    remove_temps(vfs, dir)?;
    let existing = list(vfs, dir)?;
    let number = existing.last().map_or(1, |n| n + 1);
    let path = dir.join(file_name(number));
    let tmp = dir.join(format!("{}{TEMP_SUFFIX}", file_name(number)));
    let written = (|| {
        let mut f = vfs.create(&tmp)?;
        f.append(render(trees).as_bytes())?;
        f.sync()?;
        drop(f);
        vfs.rename(&tmp, &path)?;
        vfs.sync_dir(dir)
    })();
    if let Err(e) = written {
        let _ = vfs.remove_file(&tmp);
        return Err(e);
    }
    let keep_from = existing.len().saturating_sub(KEEP - 1);
    for old in &existing[..keep_from] {
        let _ = vfs.remove_file(&dir.join(file_name(*old)));
    }
    Ok(path)
}

// ---- the text ----

fn compression_name(c: CompressionType) -> String {
    match c {
        CompressionType::None => "none".into(),
        CompressionType::Lz4 => "lz4".into(),
        CompressionType::Zstd(l) => format!("zstd:{l}"),
    }
}

fn recovery_mode_name(m: WalRecoveryMode) -> &'static str {
    match m {
        WalRecoveryMode::TolerateCorruptedTailRecords => "tolerate_corrupted_tail_records",
        WalRecoveryMode::AbsoluteConsistency => "absolute_consistency",
        WalRecoveryMode::PointInTimeRecovery => "point_in_time_recovery",
        WalRecoveryMode::SkipAnyCorruptedRecords => "skip_any_corrupted_records",
    }
}

fn parse_recovery_mode(s: &str) -> Option<WalRecoveryMode> {
    [
        WalRecoveryMode::TolerateCorruptedTailRecords,
        WalRecoveryMode::AbsoluteConsistency,
        WalRecoveryMode::PointInTimeRecovery,
        WalRecoveryMode::SkipAnyCorruptedRecords,
    ]
    .into_iter()
    .find(|m| recovery_mode_name(*m) == s)
}

/// `\`, line breaks, tabs and `"` escaped; spaces at either end as `\s`
/// (the parser trims around values).
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let last = s.chars().count().saturating_sub(1);
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '"' => out.push_str("\\\""),
            ' ' if i == 0 || i == last => out.push_str("\\s"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '\\' => '\\',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            '"' => '"',
            's' => ' ',
            _ => return None,
        });
    }
    Some(out)
}

/// The database-wide options (the default keyspace's `Options` hold them).
fn db_entries(o: &Options) -> Vec<(&'static str, String)> {
    let mut e = vec![
        ("block_cache_capacity", o.block_cache_capacity.to_string()),
        ("row_cache_capacity", o.row_cache_capacity.to_string()),
        ("max_open_files", o.max_open_files.to_string()),
        ("use_direct_reads", o.use_direct_reads.to_string()),
        ("compaction_readahead_size", o.compaction_readahead_size.to_string()),
    ];
    match o.compaction_pipeline {
        CompactionPipeline::Sequential => e.push(("compaction_pipeline", "scp".into())),
        CompactionPipeline::Pipelined => e.push(("compaction_pipeline", "pcp".into())),
        CompactionPipeline::Parallel { compute_threads: k } => {
            e.push(("compaction_pipeline", "c-ppcp".into()));
            e.push(("compaction_pipeline_threads", k.to_string()));
        }
        CompactionPipeline::Auto { max_compute_threads: k } => {
            e.push(("compaction_pipeline", "auto".into()));
            e.push(("compaction_pipeline_threads", k.to_string()));
        }
    }
    e.extend([
        ("max_background_compactions", o.max_background_compactions.to_string()),
        ("compaction_subtask_bytes", o.compaction_subtask_bytes.to_string()),
        ("compaction_warmup", o.compaction_warmup.to_string()),
        ("paranoid_checks", o.paranoid_checks.to_string()),
        ("paranoid_file_checks", o.paranoid_file_checks.to_string()),
        ("avoid_flush_during_shutdown", o.avoid_flush_during_shutdown.to_string()),
        ("wal_recovery_mode", recovery_mode_name(o.wal_recovery_mode).into()),
        ("max_manifest_file_size", o.max_manifest_file_size.to_string()),
        ("max_total_wal_size", o.max_total_wal_size.to_string()),
    ]);
    // One line per data path, in order (a path may hold any character).
    e.extend(o.db_paths.iter().map(|p| ("db_path", p.to_string_lossy().into_owned())));
    e
}

/// One keyspace's per-tree options.
fn tree_entries(o: &Options) -> Vec<(&'static str, String)> {
    let mut e = Vec::new();
    match &o.compaction_style {
        CompactionStyle::Custom(p) => {
            e.push(("compaction_style", "custom".into()));
            e.push(("custom_policy", p.name().to_string()));
        }
        s => e.push(("compaction_style", s.name())),
    }
    match o.compaction_style {
        CompactionStyle::Garnering { c } => e.push(("garnering_c", c.to_string())),
        CompactionStyle::Lwc { max_segments } => e.push(("lwc_max_segments", max_segments.to_string())),
        _ => {}
    }
    e.extend([
        ("comparator", COMPARATOR.to_string()),
        ("write_buffer_size", o.write_buffer_size.to_string()),
        ("max_write_buffer_number", o.max_write_buffer_number.to_string()),
        ("level0_file_num_compaction_trigger", o.level0_file_num_compaction_trigger.to_string()),
        ("level0_slowdown_writes_trigger", o.level0_slowdown_writes_trigger.to_string()),
        ("level0_stop_writes_trigger", o.level0_stop_writes_trigger.to_string()),
        ("max_bytes_for_level_base", o.max_bytes_for_level_base.to_string()),
        ("max_bytes_for_level_multiplier", o.max_bytes_for_level_multiplier.to_string()),
        ("num_levels", o.num_levels.to_string()),
        ("target_file_size_base", o.target_file_size_base.to_string()),
        ("block_size", o.block_size.to_string()),
        ("block_restart_interval", o.block_restart_interval.to_string()),
        ("bloom_bits_per_key", o.bloom_bits_per_key.to_string()),
        ("bloom_allocation", o.bloom_allocation.name().into()),
        ("whole_key_filtering", o.whole_key_filtering.to_string()),
        ("compression", compression_name(o.compression)),
        ("disable_auto_compactions", o.disable_auto_compactions.to_string()),
        ("buffer_trim_interval_nanos", o.buffer_trim_interval.as_nanos().to_string()),
        ("buffer_trim_threshold", o.buffer_trim_threshold.to_string()),
        ("buffer_read_misses", o.buffer_read_misses.to_string()),
        ("seek_compaction", o.seek_compaction.to_string()),
        ("max_mem_compaction_level", o.max_mem_compaction_level.to_string()),
    ]);
    if let Some(m) = &o.merge_operator {
        e.push(("merge_operator", m.name().to_string()));
    }
    if let Some(f) = &o.compaction_filter {
        e.push(("compaction_filter", f.name().to_string()));
    }
    if let Some(p) = &o.prefix_extractor {
        e.push(("prefix_extractor", p.name().to_string()));
    }
    e
}

/// The file's text for `trees` (`default` first).
pub(crate) fn render(trees: &[(String, Options)]) -> String {
    use std::fmt::Write;
    let mut s =
        String::from("# Strata options file: written at every read-write open; see docs/FORMAT.md.\n");
    s.push_str("# The MANIFEST is authoritative for the database; this file is for people and tools.\n\n");
    s.push_str("[Version]\n");
    let _ = writeln!(s, "strata_version={}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(s, "options_file_version={OPTIONS_FILE_VERSION}");
    let _ = writeln!(s, "table_format={}", crate::table::format::FORMAT_VERSION);
    if let Some((_, db)) = trees.first() {
        s.push_str("\n[DBOptions]\n");
        for (k, v) in db_entries(db) {
            let _ = writeln!(s, "{k}={}", escape(&v));
        }
    }
    for (name, o) in trees {
        let _ = writeln!(s, "\n[Keyspace \"{}\"]", escape(name));
        for (k, v) in tree_entries(o) {
            let _ = writeln!(s, "{k}={}", escape(&v));
        }
    }
    s
}

/// One `[...]` section: its kind (`Version`, `DBOptions`, `Keyspace`), the
/// quoted argument (a keyspace's name) and its `key=value` lines.
#[derive(Debug)]
struct Section {
    kind: String,
    arg: Option<String>,
    entries: Vec<Entry>,
}

#[derive(Debug)]
struct Entry {
    key: String,
    value: String,
    line: usize,
}

/// The parsed file, syntax only.
#[derive(Debug)]
pub(crate) struct Parsed {
    /// The file, for messages.
    path: PathBuf,
    sections: Vec<Section>,
}

fn parse(path: &Path, text: &str) -> Result<Parsed> {
    let bad = |line: usize, what: &str| Error::corruption(format!("{} line {line}: {what}", path.display()));
    let mut sections: Vec<Section> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let n = i + 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(inner) = line.strip_prefix('[') {
            let inner = inner.strip_suffix(']').ok_or_else(|| bad(n, "section header without ]"))?;
            let (kind, arg) = match inner.split_once(' ') {
                None => (inner.to_string(), None),
                Some((kind, rest)) => {
                    let q = rest.trim();
                    let q = q
                        .strip_prefix('"')
                        .and_then(|q| q.strip_suffix('"'))
                        .ok_or_else(|| bad(n, "section argument not in double quotes"))?;
                    (kind.to_string(), Some(unescape(q).ok_or_else(|| bad(n, "bad escape"))?))
                }
            };
            sections.push(Section { kind, arg, entries: Vec::new() });
            continue;
        }
        let (key, value) = line.split_once('=').ok_or_else(|| bad(n, "expected key=value"))?;
        let section = sections.last_mut().ok_or_else(|| bad(n, "key=value before any section"))?;
        let value = unescape(value.trim()).ok_or_else(|| bad(n, "bad escape"))?;
        section.entries.push(Entry { key: key.trim().to_string(), value, line: n });
    }
    Ok(Parsed { path: path.to_path_buf(), sections })
}

/// Reads and parses the OPTIONS file at `path`.
fn read(vfs: &dyn Vfs, path: &Path) -> Result<Parsed> {
    let bytes = vfs.read_file(path)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| Error::corruption(format!("{}: not UTF-8 text", path.display())))?;
    parse(path, text)
}

const VERSION_KEYS: &[&str] = &["strata_version", "options_file_version", "table_format"];

impl Parsed {
    fn section(&self, kind: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.kind == kind)
    }

    fn name(&self) -> String {
        self.path.file_name().map_or_else(|| self.path.display().to_string(), |n| n.to_string_lossy().into())
    }

    /// What an open refuses: a grammar or table format newer than this
    /// build's, a comparator other than the bytewise one. `Err(Corruption)`
    /// for a file whose version section cannot be read.
    fn check(&self) -> Result<()> {
        let file = self.name();
        let version = self
            .section("Version")
            .ok_or_else(|| Error::corruption(format!("{file}: no [Version] section")))?;
        for (key, known) in [
            ("options_file_version", OPTIONS_FILE_VERSION),
            ("table_format", crate::table::format::FORMAT_VERSION.into()),
        ] {
            let e = version
                .entries
                .iter()
                .find(|e| e.key == key)
                .ok_or_else(|| Error::corruption(format!("{file}: [Version] has no {key}")))?;
            let v: u64 = e
                .value
                .parse()
                .map_err(|_| Error::corruption(format!("{file} line {}: bad {key}", e.line)))?;
            if v > known {
                return Err(Error::invalid(format!(
                    "{file}: {key}={v} is newer than this build of Strata knows ({known}); open it with a newer version"
                )));
            }
        }
        for s in self.sections.iter().filter(|s| s.kind == "Keyspace") {
            for e in s.entries.iter().filter(|e| e.key == "comparator") {
                if e.value != COMPARATOR {
                    return Err(Error::invalid(format!(
                        "{file}: keyspace {:?} has comparator={}; Strata has only {COMPARATOR}",
                        s.arg.as_deref().unwrap_or(""),
                        e.value
                    )));
                }
            }
        }
        self.warn_unknown();
        Ok(())
    }

    /// Keys this build does not know are ignored (a newer version's options).
    fn warn_unknown(&self) {
        let db_keys: Vec<&str> = db_entries(&Options::default()).into_iter().map(|(k, _)| k).collect();
        for s in &self.sections {
            let known = |k: &str| match s.kind.as_str() {
                "Version" => VERSION_KEYS.contains(&k),
                "DBOptions" => db_keys.contains(&k) || k == "compaction_pipeline_threads" || k == "db_path",
                "Keyspace" => TREE_KEYS.contains(&k),
                _ => false,
            };
            for e in s.entries.iter().filter(|e| !known(&e.key)) {
                log::warn!(
                    target: "strata::options",
                    "{} line {}: unknown option [{}] {} ignored",
                    self.name(),
                    e.line,
                    s.kind,
                    e.key
                );
            }
        }
    }
}

const TREE_KEYS: &[&str] = &[
    "compaction_style",
    "custom_policy",
    "garnering_c",
    "lwc_max_segments",
    "comparator",
    "write_buffer_size",
    "max_write_buffer_number",
    "level0_file_num_compaction_trigger",
    "level0_slowdown_writes_trigger",
    "level0_stop_writes_trigger",
    "max_bytes_for_level_base",
    "max_bytes_for_level_multiplier",
    "num_levels",
    "target_file_size_base",
    "block_size",
    "block_restart_interval",
    "bloom_bits_per_key",
    "bloom_allocation",
    "whole_key_filtering",
    "compression",
    "disable_auto_compactions",
    "buffer_trim_interval_nanos",
    "buffer_trim_threshold",
    "buffer_read_misses",
    "seek_compaction",
    "max_mem_compaction_level",
    "merge_operator",
    "compaction_filter",
    "prefix_extractor",
];

/// The check every open (read-write and read-only) makes against the newest
/// OPTIONS file. A file that cannot be parsed is skipped with a warning: the
/// MANIFEST is authoritative, and a read-write open rewrites it. An I/O
/// error (listing the directory, reading the file) fails the open like any
/// other I/O error of an open.
pub(crate) fn check_at_open(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    let Some(path) = newest(vfs, dir)? else {
        return Ok(());
    };
    match read(vfs, &path).and_then(|p| p.check().map(|()| p)) {
        Ok(_) => Ok(()),
        Err(e @ (Error::InvalidArgument(_) | Error::Io(_))) => Err(e),
        Err(e) => {
            log::warn!(target: "strata::options", "{} skipped, not checked: {e}", path.display());
            Ok(())
        }
    }
}

// ---- loading ----

fn value<T: std::str::FromStr>(file: &str, e: &Entry) -> Result<T> {
    e.value.parse().map_err(|_| {
        Error::corruption(format!("{file} line {}: {}={:?} is not a valid value", e.line, e.key, e.value))
    })
}

/// Sets the database-wide options of `o` from `[DBOptions]`.
fn apply_db(file: &str, s: &Section, o: &mut Options) -> Result<()> {
    let mut pipeline = None;
    let mut threads = 1usize;
    o.db_paths.clear();
    for e in &s.entries {
        match e.key.as_str() {
            "block_cache_capacity" => o.block_cache_capacity = value(file, e)?,
            "row_cache_capacity" => o.row_cache_capacity = value(file, e)?,
            "max_open_files" => o.max_open_files = value(file, e)?,
            "use_direct_reads" => o.use_direct_reads = value(file, e)?,
            "compaction_readahead_size" => o.compaction_readahead_size = value(file, e)?,
            "compaction_pipeline" => pipeline = Some(e),
            "compaction_pipeline_threads" => threads = value(file, e)?,
            "max_background_compactions" => o.max_background_compactions = value(file, e)?,
            "compaction_subtask_bytes" => o.compaction_subtask_bytes = value(file, e)?,
            "compaction_warmup" => o.compaction_warmup = value(file, e)?,
            "paranoid_checks" => o.paranoid_checks = value(file, e)?,
            "paranoid_file_checks" => o.paranoid_file_checks = value(file, e)?,
            "avoid_flush_during_shutdown" => o.avoid_flush_during_shutdown = value(file, e)?,
            "wal_recovery_mode" => {
                o.wal_recovery_mode = parse_recovery_mode(&e.value).ok_or_else(|| bad_value(file, e))?
            }
            "max_manifest_file_size" => o.max_manifest_file_size = value(file, e)?,
            "max_total_wal_size" => o.max_total_wal_size = value(file, e)?,
            "db_path" => o.db_paths.push(PathBuf::from(&e.value)),
            _ => {}
        }
    }
    if let Some(e) = pipeline {
        o.compaction_pipeline =
            CompactionPipeline::parse(&e.value, threads).map_err(|_| bad_value(file, e))?;
    }
    Ok(())
}

fn bad_value(file: &str, e: &Entry) -> Error {
    Error::corruption(format!("{file} line {}: {}={:?} is not a valid value", e.line, e.key, e.value))
}

/// Sets the per-tree options of `o` from a `[Keyspace]` section; trait
/// objects come from `given` (what the caller supplied for that keyspace).
fn apply_tree(file: &str, ks: &str, s: &Section, given: &Options, o: &mut Options) -> Result<()> {
    let (mut style, mut custom, mut c, mut segments) = (None, None, None, None);
    let (mut merge, mut filter, mut prefix) = (None, None, None);
    for e in &s.entries {
        match e.key.as_str() {
            "compaction_style" => style = Some(e),
            "custom_policy" => custom = Some(e.value.clone()),
            "garnering_c" => c = Some(value::<f64>(file, e)?),
            "lwc_max_segments" => segments = Some(value::<usize>(file, e)?),
            "write_buffer_size" => o.write_buffer_size = value(file, e)?,
            "max_write_buffer_number" => o.max_write_buffer_number = value(file, e)?,
            "level0_file_num_compaction_trigger" => o.level0_file_num_compaction_trigger = value(file, e)?,
            "level0_slowdown_writes_trigger" => o.level0_slowdown_writes_trigger = value(file, e)?,
            "level0_stop_writes_trigger" => o.level0_stop_writes_trigger = value(file, e)?,
            "max_bytes_for_level_base" => o.max_bytes_for_level_base = value(file, e)?,
            "max_bytes_for_level_multiplier" => o.max_bytes_for_level_multiplier = value(file, e)?,
            "num_levels" => o.num_levels = value(file, e)?,
            "target_file_size_base" => o.target_file_size_base = value(file, e)?,
            "block_size" => o.block_size = value(file, e)?,
            "block_restart_interval" => o.block_restart_interval = value(file, e)?,
            "bloom_bits_per_key" => o.bloom_bits_per_key = value(file, e)?,
            "bloom_allocation" => {
                o.bloom_allocation = BloomAllocation::parse(&e.value).map_err(|_| bad_value(file, e))?
            }
            "whole_key_filtering" => o.whole_key_filtering = value(file, e)?,
            "compression" => {
                o.compression = CompressionType::parse(&e.value).map_err(|_| bad_value(file, e))?
            }
            "disable_auto_compactions" => o.disable_auto_compactions = value(file, e)?,
            "buffer_trim_interval_nanos" => {
                o.buffer_trim_interval = Duration::from_nanos(value(file, e)?);
            }
            "buffer_trim_threshold" => o.buffer_trim_threshold = value(file, e)?,
            "buffer_read_misses" => o.buffer_read_misses = value(file, e)?,
            "seek_compaction" => o.seek_compaction = value(file, e)?,
            "max_mem_compaction_level" => o.max_mem_compaction_level = value(file, e)?,
            "merge_operator" => merge = Some(e.value.clone()),
            "compaction_filter" => filter = Some(e.value.clone()),
            "prefix_extractor" => prefix = Some(e.value.clone()),
            _ => {}
        }
    }
    let style_entry =
        style.ok_or_else(|| Error::corruption(format!("{file}: keyspace {ks:?} has no compaction_style")))?;
    o.compaction_style = match (style_entry.value.as_str(), custom) {
        ("custom", Some(name)) => match &given.compaction_style {
            CompactionStyle::Custom(p) if p.name() == name => given.compaction_style.clone(),
            _ => {
                return Err(Error::invalid(format!(
                    "{file}: keyspace {ks:?} uses the custom compaction policy {name:?}, which cannot be \
                     loaded: supply it as CompactionStyle::Custom in the options given to load_latest_with"
                )))
            }
        },
        ("garnering", _) => {
            CompactionStyle::Garnering { c: c.unwrap_or(CompactionStyle::DEFAULT_GARNERING_C) }
        }
        ("lwc", _) => CompactionStyle::Lwc {
            max_segments: segments.unwrap_or(CompactionStyle::DEFAULT_LWC_MAX_SEGMENTS),
        },
        (name, _) => CompactionStyle::from_name(name).map_err(|_| bad_value(file, style_entry))?,
    };
    o.merge_operator = match merge {
        None => given.merge_operator.clone(),
        Some(name) => match &given.merge_operator {
            Some(m) if m.name() == name => Some(m.clone()),
            Some(m) => {
                return Err(Error::invalid(format!(
                    "{file}: keyspace {ks:?} uses merge operator {name:?}, but the one supplied is {:?}",
                    m.name()
                )))
            }
            None => {
                return Err(Error::invalid(format!(
                    "{file}: keyspace {ks:?} uses merge operator {name:?}, which cannot be loaded: supply it \
                     in the options given to load_latest_with"
                )))
            }
        },
    };
    o.compaction_filter = match (filter, &given.compaction_filter) {
        (Some(name), Some(f)) if f.name() != name => {
            return Err(Error::invalid(format!(
                "{file}: keyspace {ks:?} uses compaction filter {name:?}, but the one supplied is {:?}",
                f.name()
            )))
        }
        (Some(name), None) => {
            // Not a correctness matter (a compaction without it keeps entries it would drop).
            log::warn!(
                target: "strata::options",
                "{file}: keyspace {ks:?} used compaction filter {name:?}, not supplied: loaded without one"
            );
            None
        }
        (_, f) => f.clone(),
    };
    o.prefix_extractor = match (prefix, &given.prefix_extractor) {
        (Some(name), Some(p)) if p.name() == name => Some(p.clone()),
        (Some(name), _) => match name.strip_prefix("strata.FixedPrefix.").and_then(|n| n.parse().ok()) {
            Some(len) => Some(Arc::new(FixedPrefix::new(len))),
            // Tables record their extractor, so leaving it out only costs filter skips.
            None => {
                log::warn!(
                    target: "strata::options",
                    "{file}: keyspace {ks:?} used prefix extractor {name:?}, not supplied: loaded without one"
                );
                given.prefix_extractor.clone()
            }
        },
        (None, p) => p.clone(),
    };
    Ok(())
}

/// [`Options::load_latest_with`]'s work.
fn load(dir: &Path, given: &Options) -> Result<Options> {
    let vfs = given.vfs.as_ref();
    let path = newest(vfs, dir)?
        .ok_or_else(|| Error::NotADatabase(format!("{} holds no OPTIONS file", dir.display())))?;
    let parsed = read(vfs, &path)?;
    parsed.check()?;
    let file = parsed.name();
    let mut o = given.clone();
    o.keyspaces.clear();
    if let Some(s) = parsed.section("DBOptions") {
        apply_db(&file, s, &mut o)?;
    }
    let mut saw_default = false;
    for s in parsed.sections.iter().filter(|s| s.kind == "Keyspace") {
        let name =
            s.arg.clone().ok_or_else(|| Error::corruption(format!("{file}: a [Keyspace] without a name")))?;
        if name == "default" {
            let given_default = given.clone();
            apply_tree(&file, &name, s, &given_default, &mut o)?;
            saw_default = true;
        } else {
            let given_ks =
                given.keyspaces.iter().find(|(n, _)| *n == name).map(|(_, k)| k.apply(given)).unwrap_or_else(
                    || {
                        let mut g = given.clone();
                        g.compaction_style = CompactionStyle::Leveled;
                        (g.merge_operator, g.compaction_filter, g.prefix_extractor) = (None, None, None);
                        g
                    },
                );
            let mut tree = Options::default();
            apply_tree(&file, &name, s, &given_ks, &mut tree)?;
            o.keyspaces.push((name, KeyspaceOptions::from_options(&tree)));
        }
    }
    if !saw_default {
        return Err(Error::corruption(format!("{file}: no [Keyspace \"default\"] section")));
    }
    // A keyspace dropped after the file was written must not come back:
    // `Db::open` creates the keyspaces it is given that do not exist.
    if vfs.exists(&crate::filename::current_path(dir)) {
        let live = crate::Db::list_keyspaces_at(dir, given)?;
        o.keyspaces.retain(|(name, _)| {
            let keep = live.contains(name);
            if !keep {
                log::warn!(target: "strata::options", "{file}: keyspace {name:?} is no longer in the database: left out");
            }
            keep
        });
    }
    // Keyspaces the caller named that the file does not list (to be created).
    for (name, ks) in &given.keyspaces {
        if !o.keyspaces.iter().any(|(n, _)| n == name) {
            o.keyspaces.push((name.clone(), ks.clone()));
        }
    }
    o.validate()?;
    Ok(o)
}

impl Options {
    /// The options the database in `dir` last opened read-write with, from
    /// its newest `OPTIONS-NNNNNN` file (RocksDB `LoadLatestOptions`), on
    /// the real file system: the database-wide options, the default
    /// keyspace's options, and each other keyspace's through
    /// [`Options::with_keyspace`]. Options that are not written down stay at
    /// their defaults: `create_if_missing`, `error_if_exists`, event
    /// listeners, the file system. A database whose file names a merge
    /// operator or a custom policy fails with [`Error::InvalidArgument`]
    /// naming it: supply those through [`Options::load_latest_with`]. No
    /// OPTIONS file (a database last opened by an older Strata) is
    /// [`Error::NotADatabase`]; a damaged one is [`Error::Corruption`].
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{CompactionStyle, Db, KeyspaceOptions, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let opts = Options::default().with_compaction_style(CompactionStyle::Tiered).with_write_buffer_size(1 << 20);
    /// let db = Db::open(dir.path(), opts)?;
    /// db.create_keyspace("index", KeyspaceOptions::default().with_compaction_style(CompactionStyle::Lwc { max_segments: 4 }))?;
    /// db.close()?;
    ///
    /// let loaded = Options::load_latest(dir.path())?;
    /// let db = Db::open(dir.path(), loaded)?;
    /// assert_eq!(db.property("strata.policy")?, "tiered");
    /// assert_eq!(db.keyspace("index")?.property("strata.policy")?, "lwc");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load_latest(dir: impl AsRef<Path>) -> Result<Options> {
        Self::load_latest_with(dir, &Options::default().with_vfs(Arc::new(RealVfs::new())))
    }

    /// [`Options::load_latest`] through `given`'s file system, keeping what
    /// the file cannot hold from `given`: its event listeners,
    /// `create_if_missing` and `error_if_exists`, and the trait objects the
    /// file names — a custom policy ([`CompactionStyle::Custom`]), merge
    /// operator, compaction filter or prefix extractor of the default
    /// keyspace set on `given` itself, of keyspace `K` on the
    /// [`KeyspaceOptions`] given with `given.with_keyspace(K, ..)`. Each must
    /// have the name the file records: a custom policy or merge operator
    /// that is missing or named otherwise is [`Error::InvalidArgument`]; a
    /// missing compaction filter or prefix extractor is left out with a
    /// warning (neither changes what reads return; `strata.FixedPrefix.N` is
    /// rebuilt). Every other option comes from the file.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{associative_merge_operator, Db, MemVfs, Options};
    ///
    /// let concat = associative_merge_operator("concat", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    /// let base = Options::default().with_vfs(Arc::new(MemVfs::new()));
    /// let db = Db::open("/db", base.clone().with_merge_operator(concat.clone()).with_block_size(8192))?;
    /// db.merge("k", "a")?;
    /// db.close()?;
    ///
    /// // The operator is named in the file but must be supplied.
    /// assert!(Options::load_latest_with("/db", &base).is_err());
    /// let loaded = Options::load_latest_with("/db", &base.with_merge_operator(concat))?;
    /// let db = Db::open("/db", loaded)?;
    /// db.merge("k", "b")?;
    /// assert_eq!(db.get("k")?, Some(b"ab".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn load_latest_with(dir: impl AsRef<Path>, given: &Options) -> Result<Options> {
        load(dir.as_ref(), given)
    }

    /// The options given for keyspace `name` with [`Options::with_keyspace`]
    /// (or loaded by [`Options::load_latest`]), if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{CompactionStyle, KeyspaceOptions, Options};
    ///
    /// let opts = Options::default().with_keyspace("log", KeyspaceOptions::default().with_compaction_style(CompactionStyle::Tiered));
    /// assert_eq!(opts.keyspace_options("log").map(|k| k.compaction_style().name()).as_deref(), Some("tiered"));
    /// assert!(opts.keyspace_options("other").is_none());
    /// ```
    pub fn keyspace_options(&self, name: &str) -> Option<&KeyspaceOptions> {
        self.keyspaces.iter().find(|(n, _)| n == name).map(|(_, k)| k)
    }

    /// The names of the keyspaces given with [`Options::with_keyspace`] (or
    /// loaded by [`Options::load_latest`]), in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{KeyspaceOptions, Options};
    ///
    /// let opts = Options::default().with_keyspace("a", KeyspaceOptions::default()).with_keyspace("b", KeyspaceOptions::default());
    /// assert_eq!(opts.keyspace_names(), ["a", "b"]);
    /// ```
    pub fn keyspace_names(&self) -> Vec<String> {
        self.keyspaces.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The compaction policy (of the default keyspace).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{CompactionStyle, Options};
    ///
    /// assert_eq!(Options::default().compaction_style().name(), "leveled");
    /// ```
    pub fn compaction_style(&self) -> &CompactionStyle {
        &self.compaction_style
    }
}

#[cfg(test)]
mod tests;
