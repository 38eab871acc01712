//! `stats()`: the engine's counters as a dict of numbers.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use strata::Stats;

/// Sets `d[name] = s.name` for each counter named.
macro_rules! counters {
    ($d:expr, $s:expr, $($f:ident),* $(,)?) => {
        $( $d.set_item(stringify!($f), $s.$f)?; )*
    };
}

pub fn stats_dict<'py>(py: Python<'py>, s: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    counters!(
        d,
        s,
        user_bytes_written,
        wal_bytes_written,
        flush_bytes_written,
        compaction_bytes_read,
        compaction_bytes_written,
        write_amplification,
        write_groups,
        writes,
        wal_syncs,
        flushes,
        compactions,
        trivial_moves,
        dropped_files,
        slowdowns,
        stops,
        gets,
        multi_gets,
        get_table_probes,
        iter_seeks,
        iter_tables_opened,
        files_deleted,
        range_dels_written,
        range_dels_dropped,
        buffer_hits,
        buffer_trims,
        seek_compactions,
        idle_compactions,
        filter_rebuilds,
        ingested_files,
        compaction_filter_removed,
        total_table_bytes,
        memtable_bytes,
        open_tables,
        table_memory_bytes,
    );
    d.set_item("stall_seconds", s.stall_time.as_secs_f64())?;
    d.set_item("compaction_seconds", s.compaction_time.as_secs_f64())?;
    d.set_item("read_amplification", s.read_amplification())?;
    d.set_item("block_cache_hits", s.cache.hits)?;
    d.set_item("block_cache_misses", s.cache.misses)?;
    d.set_item("block_cache_usage_bytes", s.cache.usage_bytes)?;
    d.set_item("block_cache_capacity_bytes", s.cache.capacity_bytes)?;
    Ok(d)
}
