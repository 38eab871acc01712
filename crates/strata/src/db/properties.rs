//! Properties (RocksDB `GetProperty`): named numbers and reports about one
//! keyspace's tree, under `strata.` and, for the names RocksDB users script
//! against, `rocksdb.` as well. An unknown name is an error that says where
//! the list is, never a silent `None`.

use std::sync::Arc;

use super::{pipeline_report, DbInner, SuperVersion};
use crate::compaction::view::build_view;
use crate::error::{Error, Result};
use crate::filename::{parse_file_name, FileKind};
use crate::version::FileMeta;

/// Properties whose value is a number (`property_int` answers them).
const NUMERIC: &[&str] = &[
    "estimate-num-keys",
    "num-entries",
    "num-range-deletes",
    "total-sst-files-size",
    "live-sst-files-size",
    "estimate-live-data-size",
    "cur-size-all-mem-tables",
    "cur-size-active-mem-table",
    "size-all-mem-tables",
    "num-immutable-mem-table",
    "num-immutable-mem-table-flushed",
    "num-entries-active-mem-table",
    "num-entries-imm-mem-tables",
    "num-running-compactions",
    "num-running-flushes",
    "compaction-pending",
    "mem-table-flush-pending",
    "estimate-pending-compaction-bytes",
    "num-snapshots",
    "oldest-snapshot-sequence",
    "block-cache-capacity",
    "block-cache-usage",
    "row-cache-usage",
    "estimate-table-readers-mem",
    "is-write-stopped",
    "background-errors",
    "num-levels",
    "min-log-number-to-keep",
];

/// Properties whose value is text.
const TEXT: &[&str] =
    &["stats", "levels", "levelstats", "sstables", "policy", "compactions", "compaction-pipeline"];

/// Numeric properties RocksDB does not have: listed under `strata.` only.
const STRATA_ONLY: &[&str] =
    &["num-entries", "num-range-deletes", "row-cache-usage", "policy", "compactions", "compaction-pipeline"];

/// `strata.X` / `rocksdb.X` -> `X`, if the prefix and name go together.
fn bare(name: &str) -> Option<&str> {
    if let Some(n) = name.strip_prefix("strata.") {
        return Some(n);
    }
    name.strip_prefix("rocksdb.").filter(|n| !STRATA_ONLY.contains(n))
}

fn unknown(name: &str) -> Error {
    Error::invalid(format!("unknown property {name:?}; Db::property_names lists the known ones"))
}

fn run_files(sv: &SuperVersion) -> impl Iterator<Item = &Arc<FileMeta>> {
    sv.version.levels.iter().flat_map(|l| &l.runs).flat_map(|r| r.files.iter())
}

impl DbInner {
    /// Every property name this tree answers (both prefixes, one
    /// `num-files-at-level<N>` per level).
    pub(crate) fn property_names(&self) -> Vec<String> {
        let mut bare: Vec<String> = NUMERIC.iter().chain(TEXT).map(|s| s.to_string()).collect();
        bare.extend((0..self.opts.num_levels).map(|l| format!("num-files-at-level{l}")));
        let mut names: Vec<String> = bare.iter().map(|n| format!("strata.{n}")).collect();
        names.extend(
            bare.iter().filter(|n| !STRATA_ONLY.contains(&n.as_str())).map(|n| format!("rocksdb.{n}")),
        );
        names
    }

    /// A numeric property's value.
    pub(crate) fn property_int(&self, name: &str) -> Result<u64> {
        let n = bare(name).ok_or_else(|| unknown(name))?;
        if let Some(level) = n.strip_prefix("num-files-at-level") {
            let l: usize = level.parse().map_err(|_| unknown(name))?;
            let version = self.versions.current();
            return if l < version.num_levels() {
                Ok(version.level_files(l) as u64)
            } else {
                Err(unknown(name))
            };
        }
        if !NUMERIC.contains(&n) {
            return Err(if TEXT.contains(&n) {
                Error::invalid(format!("property {name:?} is text, not a number: use Db::property"))
            } else {
                unknown(name)
            });
        }
        let sv = self.sv.load_full();
        let mems = || std::iter::once(&sv.mem).chain(&sv.imms);
        Ok(match n {
            "estimate-num-keys" => {
                // RocksDB's estimate: entries less deletions (each deletion
                // hides a put elsewhere), with duplicates counted.
                let tables: u64 =
                    run_files(&sv).map(|f| f.num_entries.saturating_sub(2 * f.num_deletions)).sum();
                tables + mems().map(|m| m.len() as u64).sum::<u64>()
            }
            "num-entries" => run_files(&sv).map(|f| f.num_entries).sum(),
            "num-range-deletes" => {
                let in_mem: u64 = mems().map(|m| m.range_dels(crate::key::MAX_SEQ).len() as u64).sum();
                in_mem + run_files(&sv).map(|f| f.num_range_dels).sum::<u64>()
            }
            "live-sst-files-size" => sv.version.live_bytes(),
            "total-sst-files-size" => self.table_bytes_on_disk(),
            "estimate-live-data-size" => run_files(&sv).map(|f| f.size).sum(),
            "cur-size-all-mem-tables" => mems().map(|m| m.approximate_memory_usage() as u64).sum(),
            "size-all-mem-tables" => {
                let history: usize =
                    self.state.lock().history.iter().map(|h| h.mem.approximate_memory_usage()).sum();
                mems().map(|m| m.approximate_memory_usage() as u64).sum::<u64>() + history as u64
            }
            "num-immutable-mem-table-flushed" => self.state.lock().history.len() as u64,
            "cur-size-active-mem-table" => sv.mem.approximate_memory_usage() as u64,
            "num-immutable-mem-table" => sv.imms.len() as u64,
            "num-entries-active-mem-table" => sv.mem.len() as u64,
            "num-entries-imm-mem-tables" => sv.imms.iter().map(|m| m.len() as u64).sum(),
            "num-running-compactions" => {
                self.running.lock().len() as u64 + u64::from(self.compaction_lock.is_locked())
            }
            "num-running-flushes" | "mem-table-flush-pending" => u64::from(!sv.imms.is_empty()),
            "compaction-pending" => {
                let view = build_view(&sv.version, &self.versions, &Default::default());
                u64::from(self.policy.pick(&view).is_some())
            }
            "estimate-pending-compaction-bytes" => self.pending_compaction_bytes(),
            "num-snapshots" => self.shared.snapshots.count_and_oldest().0 as u64,
            "oldest-snapshot-sequence" => self.shared.snapshots.count_and_oldest().1.unwrap_or(0),
            "block-cache-capacity" => self.block_cache.as_ref().map_or(0, |c| c.total_stats().capacity_bytes),
            "block-cache-usage" => self.block_cache.as_ref().map_or(0, |c| c.total_stats().usage_bytes),
            "row-cache-usage" => self.row_cache.as_ref().map_or(0, |c| c.total_stats().usage_bytes),
            "estimate-table-readers-mem" => self.tables.memory_usage() as u64,
            "is-write-stopped" => {
                let l0 = sv.version.level_files(0);
                let stops = !self.opts.disable_auto_compactions && l0 >= self.opts.level0_stop_writes_trigger;
                u64::from(stops || sv.imms.len() + 1 >= self.opts.max_write_buffer_number)
            }
            "background-errors" => u64::from(self.state.lock().bg_error.is_some()),
            "num-levels" => sv.version.num_levels() as u64,
            "min-log-number-to-keep" => self.oldest_needed_wal(),
            _ => return Err(unknown(name)),
        })
    }

    /// A property's value as text: a numeric one in decimal.
    pub(crate) fn property(&self, name: &str) -> Result<String> {
        let n = bare(name).ok_or_else(|| unknown(name))?;
        if !TEXT.contains(&n) {
            return self.property_int(name).map(|v| v.to_string());
        }
        let s = self.stats();
        Ok(match n {
            "stats" => s.to_string(),
            "levels" | "levelstats" => {
                let text = s.to_string();
                text.lines().take(s.levels.len() + 1).collect::<Vec<_>>().join("\n")
            }
            "sstables" => self.sstables(),
            "policy" => self.policy.name().to_string(),
            "compaction-pipeline" => pipeline_report(&s, self.opts.compaction_pipeline),
            "compactions" => s
                .recent_compactions
                .iter()
                .map(|c| {
                    format!(
                        "{} ({}) -> L{}: {} in, {} out, read {} B, wrote {} B, {:?}{}",
                        c.kind,
                        c.reason,
                        c.output_level,
                        c.input_files,
                        c.output_files,
                        c.bytes_read,
                        c.bytes_written,
                        c.duration,
                        match c.warmup_blocks_inserted {
                            0 => String::new(),
                            n => format!(", warmed {n} blocks"),
                        }
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
            _ => return Err(unknown(name)),
        })
    }

    /// Bytes of the run tables holding keys in each `[start, end)`: whole
    /// tables inside a range, and for tables it cuts, the index offsets of
    /// its ends.
    pub(crate) fn approximate_sizes(&self, ranges: &[(&[u8], &[u8])]) -> Result<Vec<u64>> {
        let version = self.versions.current();
        let files: Vec<&Arc<FileMeta>> =
            version.levels.iter().flat_map(|l| &l.runs).flat_map(|r| r.files.iter()).collect();
        let mut out = Vec::with_capacity(ranges.len());
        for &(start, end) in ranges {
            let mut total = 0;
            for f in &files {
                let (lo, hi) = (crate::key::user_key(&f.smallest), crate::key::user_key(&f.largest));
                if start >= end || hi < start || lo >= end {
                    continue;
                }
                if start <= lo && hi < end {
                    total += f.size;
                    continue;
                }
                let table = f.table(&self.tables)?;
                let from = if start <= lo { 0 } else { table.approximate_offset_of(start)? };
                let to = if hi < end { f.size } else { table.approximate_offset_of(end)? };
                total += to.saturating_sub(from);
            }
            out.push(total);
        }
        Ok(out)
    }

    /// `sstables`: every run's and buffer's tables, one per line.
    fn sstables(&self) -> String {
        let version = self.versions.current();
        let mut out = Vec::new();
        let show = |k: &[u8]| escape(crate::key::user_key(k));
        for (l, level) in version.levels.iter().enumerate() {
            for run in &level.runs {
                for f in &run.files {
                    out.push(format!(
                        "L{l} run {} table {}: {} B, {} entries, [{} .. {}], seq {}..{}{}",
                        run.id,
                        f.id,
                        f.size,
                        f.num_entries,
                        show(&f.smallest),
                        show(&f.largest),
                        f.smallest_seq,
                        f.largest_seq,
                        if f.num_segments() > 1 {
                            format!(", {} segments", f.num_segments())
                        } else {
                            String::new()
                        }
                    ));
                }
            }
            for b in &level.buffers {
                out.push(format!(
                    "L{l} buffer of run {}: {} tables, {} files{}",
                    b.run,
                    b.tables.len(),
                    b.num_files(),
                    if b.complete { ", complete" } else { "" }
                ));
            }
        }
        out.join("\n")
    }

    /// Bytes of every table file of this tree still on disk: the live ones
    /// and those only an older Version (an iterator, a snapshot read) holds.
    fn table_bytes_on_disk(&self) -> u64 {
        let mut total = 0;
        for dir in self.tables.paths().dirs() {
            for name in self.vfs.list_dir(dir).unwrap_or_default() {
                if matches!(parse_file_name(&name), Some(FileKind::Table(_))) {
                    total += self.vfs.file_size(&dir.join(&name)).unwrap_or(0);
                }
            }
        }
        total
    }

    /// Bytes the policy's targets want moved down: for each level with a
    /// target, what it holds above it (RocksDB's estimate counts the same
    /// excess), plus L0 once it reaches its compaction trigger.
    fn pending_compaction_bytes(&self) -> u64 {
        let version = self.versions.current();
        let view = build_view(&version, &self.versions, &Default::default());
        let mut pending = 0;
        for l in 0..version.num_levels() {
            let bytes = version.level_bytes(l);
            match self.policy.level_target_bytes(&view, l) {
                Some(target) => pending += bytes.saturating_sub(target),
                None if l == 0 && version.level_files(0) >= self.opts.level0_file_num_compaction_trigger => {
                    pending += bytes
                }
                None => {}
            }
        }
        pending
    }
}

/// Printable ASCII as is, other bytes as `\xNN`.
fn escape(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(
            |&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    (b as char).to_string()
                } else {
                    format!("\\x{b:02x}")
                }
            },
        )
        .collect()
}
