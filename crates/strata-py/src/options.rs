//! `options=` dictionaries: option names as the OPTIONS file spells them,
//! applied through the engine's `with_*` setters (so a per-tree option the
//! caller names counts as set explicitly, and one it leaves out keeps what
//! the database records).

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};
use strata::merge_operators::builtin_merge_operator;
use strata::{BloomAllocation, CompactionStyle, CompressionType, KeyspaceOptions, Options};

use crate::errors::InvalidArgumentError;

fn bad(name: &str, want: &str, v: &Bound<'_, PyAny>) -> PyErr {
    InvalidArgumentError::new_err(format!("option {name:?} takes {want}, not {v:?}"))
}

fn int<T: TryFrom<u64>>(name: &str, v: &Bound<'_, PyAny>) -> PyResult<T> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(bad(name, "a non-negative int", v));
    }
    v.extract::<u64>()
        .ok()
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| bad(name, "a non-negative int", v))
}

fn float(name: &str, v: &Bound<'_, PyAny>) -> PyResult<f64> {
    if v.is_instance_of::<PyBool>() || !(v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>()) {
        return Err(bad(name, "a number", v));
    }
    v.extract::<f64>().map_err(|_| bad(name, "a number", v))
}

fn boolean(name: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    v.cast::<PyBool>().map(|b| b.is_true()).map_err(|_| bad(name, "a bool", v))
}

fn text(name: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    v.cast::<PyString>().map(|s| s.to_string()).map_err(|_| bad(name, "a str", v))
}

fn engine<T>(r: strata::Result<T>) -> PyResult<T> {
    r.map_err(crate::errors::to_py)
}

/// A policy by name (`None`: not set).
pub fn policy(name: Option<&str>) -> PyResult<Option<CompactionStyle>> {
    name.map(|n| engine(CompactionStyle::from_name(n))).transpose()
}

/// Applies one per-tree option to `$o` (an `Options` or a
/// `KeyspaceOptions`, which have the same setters); `None` if `$name` is
/// not a per-tree option.
macro_rules! tree_option {
    ($o:expr, $name:expr, $v:expr) => {{
        let (o, n, v) = ($o, $name, $v);
        'known: {
            Some(match n {
                "write_buffer_size" => o.with_write_buffer_size(int(n, v)?),
                "max_write_buffer_number" => o.with_max_write_buffer_number(int(n, v)?),
                "level0_file_num_compaction_trigger" => o.with_level0_file_num_compaction_trigger(int(n, v)?),
                "level0_slowdown_writes_trigger" => o.with_level0_slowdown_writes_trigger(int(n, v)?),
                "level0_stop_writes_trigger" => o.with_level0_stop_writes_trigger(int(n, v)?),
                "max_bytes_for_level_base" => o.with_max_bytes_for_level_base(int(n, v)?),
                "max_bytes_for_level_multiplier" => o.with_max_bytes_for_level_multiplier(float(n, v)?),
                "num_levels" => o.with_num_levels(int(n, v)?),
                "target_file_size_base" => o.with_target_file_size_base(int(n, v)?),
                "block_size" => o.with_block_size(int(n, v)?),
                "block_restart_interval" => o.with_block_restart_interval(int(n, v)?),
                "bloom_bits_per_key" => o.with_bloom_bits_per_key(float(n, v)?),
                "bloom_allocation" => o.with_bloom_allocation(engine(BloomAllocation::parse(&text(n, v)?))?),
                "whole_key_filtering" => o.with_whole_key_filtering(boolean(n, v)?),
                "compression" => o.with_compression(engine(CompressionType::parse(&text(n, v)?))?),
                "compaction_style" => {
                    o.with_compaction_style(engine(CompactionStyle::from_name(&text(n, v)?))?)
                }
                "disable_auto_compactions" => o.with_disable_auto_compactions(boolean(n, v)?),
                "seek_compaction" => o.with_seek_compaction(boolean(n, v)?),
                "max_mem_compaction_level" => o.with_max_mem_compaction_level(int(n, v)?),
                "buffer_last_level" => o.with_buffer_last_level(boolean(n, v)?),
                "buffer_min_part_size" => o.with_buffer_min_part_size(Some(int(n, v)?)),
                "idle_compaction_nanos" => {
                    o.with_idle_compaction(Some(std::time::Duration::from_nanos(int(n, v)?)))
                }
                "merge_operator" => {
                    let name = text(n, v)?;
                    let op = builtin_merge_operator(&name).ok_or_else(|| {
                        InvalidArgumentError::new_err(format!(
                            "unknown merge operator {name:?}; the engine ships {:?}",
                            crate::MERGE_OPERATORS
                        ))
                    })?;
                    o.with_merge_operator(op)
                }
                _ => break 'known None,
            })
        }
    }};
}

fn unknown(name: &str) -> PyErr {
    InvalidArgumentError::new_err(format!("unknown option {name:?}"))
}

/// Database options from `open(..., options=)`.
pub fn db_options(mut o: Options, dict: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    let Some(dict) = dict else { return Ok(o) };
    for (k, v) in dict.iter() {
        let name = text("option name", &k)?;
        let n = name.as_str();
        let v = &v;
        o = match n {
            "block_cache_capacity" => o.with_block_cache_capacity(int(n, v)?),
            "row_cache_capacity" => o.with_row_cache(int(n, v)?),
            "max_open_files" => o.with_max_open_files(int(n, v)?),
            "max_background_jobs" => o.with_max_background_jobs(int(n, v)?),
            "max_background_compactions" => o.with_max_background_compactions(int(n, v)?),
            "mmap_reads" => o.with_mmap_reads(boolean(n, v)?),
            "use_direct_reads" => o.with_use_direct_reads(boolean(n, v)?),
            "paranoid_checks" => o.with_paranoid_checks(boolean(n, v)?),
            "info_log" => o.with_info_log(boolean(n, v)?),
            "max_total_wal_size" => o.with_max_total_wal_size(int(n, v)?),
            "delayed_write_rate" => o.with_delayed_write_rate(int(n, v)?),
            "avoid_flush_during_shutdown" => o.with_avoid_flush_during_shutdown(boolean(n, v)?),
            _ => match tree_option!(o, n, v) {
                Some(o) => o,
                None => return Err(unknown(n)),
            },
        };
    }
    Ok(o)
}

/// Keyspace options from `create_keyspace(..., options=)`.
pub fn keyspace_options(
    mut o: KeyspaceOptions,
    dict: Option<&Bound<'_, PyDict>>,
) -> PyResult<KeyspaceOptions> {
    let Some(dict) = dict else { return Ok(o) };
    for (k, v) in dict.iter() {
        let name = text("option name", &k)?;
        o = match tree_option!(o, name.as_str(), &v) {
            Some(o) => o,
            None => {
                return Err(InvalidArgumentError::new_err(format!(
                    "unknown keyspace option {name:?} (database-wide options go to strata.open)"
                )))
            }
        };
    }
    Ok(o)
}
