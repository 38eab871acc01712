//! The OPTIONS file's text: rendering options as sections of `key=value`
//! lines, and parsing them back into sections (checked, not yet applied).

use std::path::{Path, PathBuf};

use crate::compaction::style::CompactionStyle;
use crate::error::{Error, Result};
use crate::options::kinds::{CompactionPipeline, CompressionType, WalRecoveryMode};
use crate::options::Options;
use crate::vfs::Vfs;

use super::{COMPARATOR, OPTIONS_FILE_VERSION};

pub(super) fn compression_name(c: CompressionType) -> String {
    match c {
        CompressionType::None => "none".into(),
        CompressionType::Lz4 => "lz4".into(),
        CompressionType::Zstd(l) => format!("zstd:{l}"),
    }
}

pub(super) fn recovery_mode_name(m: WalRecoveryMode) -> &'static str {
    match m {
        WalRecoveryMode::TolerateCorruptedTailRecords => "tolerate_corrupted_tail_records",
        WalRecoveryMode::AbsoluteConsistency => "absolute_consistency",
        WalRecoveryMode::PointInTimeRecovery => "point_in_time_recovery",
        WalRecoveryMode::SkipAnyCorruptedRecords => "skip_any_corrupted_records",
    }
}

pub(super) fn parse_recovery_mode(s: &str) -> Option<WalRecoveryMode> {
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
pub(super) fn escape(s: &str) -> String {
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

pub(super) fn unescape(s: &str) -> Option<String> {
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
        ("delayed_write_rate", o.delayed_write_rate.to_string()),
        ("use_direct_reads", o.use_direct_reads.to_string()),
        ("mmap_reads", o.mmap_reads.to_string()),
        ("max_mapped_files", o.max_mapped_files.to_string()),
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
        ("max_background_jobs", o.max_background_jobs.to_string()),
        ("compaction_subtask_bytes", o.compaction_subtask_bytes.to_string()),
        ("compaction_warmup", o.compaction_warmup.to_string()),
        ("paranoid_checks", o.paranoid_checks.to_string()),
        ("paranoid_file_checks", o.paranoid_file_checks.to_string()),
        ("avoid_flush_during_shutdown", o.avoid_flush_during_shutdown.to_string()),
        ("wal_recovery_mode", recovery_mode_name(o.wal_recovery_mode).into()),
        ("max_manifest_file_size", o.max_manifest_file_size.to_string()),
        ("max_total_wal_size", o.max_total_wal_size.to_string()),
        ("max_write_buffer_size_to_maintain", o.max_write_buffer_size_to_maintain.to_string()),
        ("info_log", o.info_log.to_string()),
        ("max_log_file_size", o.max_log_file_size.to_string()),
        ("keep_log_file_num", o.keep_log_file_num.to_string()),
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
        ("buffer_last_level", o.buffer_last_level.to_string()),
    ]);
    if let Some(idle) = o.idle_compaction {
        e.push(("idle_compaction_nanos", idle.as_nanos().to_string()));
    }
    if let Some(min_part) = o.buffer_min_part_size {
        e.push(("buffer_min_part_size", min_part.to_string()));
    }
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
    s.push('\n');
    let crc = crc32c::crc32c(s.as_bytes());
    let _ = writeln!(s, "{CHECKSUM_PREFIX}{crc:08x}");
    s
}

/// The last line of a file: the CRC32C (Castagnoli, unmasked, 8 lowercase
/// hex digits) of every byte before it. A comment to the parser, so older
/// builds read such files as before.
pub(crate) const CHECKSUM_PREFIX: &str = "# crc32c=";

/// Whether `bytes` carry a checksum line, and then whether it holds: `Ok(true)`
/// verified, `Ok(false)` no checksum (a file older than it), `Err` a file
/// that fails it or whose checksum line is damaged.
fn verify(path: &Path, bytes: &[u8]) -> Result<bool> {
    let prefix = CHECKSUM_PREFIX.as_bytes();
    // The last occurrence: a value may hold the text, the real line is last.
    let Some(at) = bytes.windows(prefix.len()).rposition(|w| w == prefix) else {
        return Ok(false);
    };
    let fails = || Error::corruption(format!("{}: fails its checksum (damaged)", path.display()));
    let tail = &bytes[at + prefix.len()..];
    if tail.len() != 9 || tail[8] != b'\n' || !tail[..8].iter().all(|b| b.is_ascii_hexdigit()) {
        return Err(fails());
    }
    let want = std::str::from_utf8(&tail[..8]).ok().and_then(|h| u32::from_str_radix(h, 16).ok());
    if want != Some(crc32c::crc32c(&bytes[..at])) {
        return Err(fails());
    }
    Ok(true)
}

/// One `[...]` section: its kind (`Version`, `DBOptions`, `Keyspace`), the
/// quoted argument (a keyspace's name) and its `key=value` lines.
#[derive(Debug)]
pub(super) struct Section {
    pub(super) kind: String,
    pub(super) arg: Option<String>,
    pub(super) entries: Vec<Entry>,
}

#[derive(Debug)]
pub(super) struct Entry {
    pub(super) key: String,
    pub(super) value: String,
    pub(super) line: usize,
}

/// The parsed file, syntax only.
#[derive(Debug)]
pub(crate) struct Parsed {
    /// The file, for messages.
    pub(super) path: PathBuf,
    pub(super) sections: Vec<Section>,
    /// The file passed its checksum (false: written before files had one).
    pub(super) verified: bool,
}

pub(super) fn parse(path: &Path, text: &str) -> Result<Parsed> {
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
    Ok(Parsed { path: path.to_path_buf(), sections, verified: false })
}

/// Reads and parses the OPTIONS file at `path`.
/// A file that fails its checksum is `Corruption`.
pub(crate) fn read(vfs: &dyn Vfs, path: &Path) -> Result<Parsed> {
    let bytes = vfs.read_file(path)?;
    let verified = verify(path, &bytes)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| Error::corruption(format!("{}: not UTF-8 text", path.display())))?;
    let mut parsed = parse(path, text)?;
    parsed.verified = verified;
    Ok(parsed)
}

const VERSION_KEYS: &[&str] = &["strata_version", "options_file_version", "table_format"];

impl Parsed {
    pub(super) fn section(&self, kind: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.kind == kind)
    }

    pub(super) fn name(&self) -> String {
        self.path.file_name().map_or_else(|| self.path.display().to_string(), |n| n.to_string_lossy().into())
    }

    /// What an open refuses: a grammar or table format newer than this
    /// build's, a comparator other than the bytewise one. `Err(Corruption)`
    /// for a file whose version section cannot be read, and instead of a
    /// refusal for a file without a checksum: only older builds wrote those,
    /// and they never wrote such values, so it can only be damage.
    pub(super) fn check(&self) -> Result<()> {
        match self.refusal() {
            Err(Error::InvalidArgument(m)) if !self.verified => {
                Err(Error::corruption(format!("{m} (in a file without a checksum: taken as damage)")))
            }
            r => r,
        }
    }

    fn refusal(&self) -> Result<()> {
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
    pub(super) fn warn_unknown(&self) {
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
    "buffer_last_level",
    "buffer_min_part_size",
    "idle_compaction_nanos",
    "merge_operator",
    "compaction_filter",
    "prefix_extractor",
];
