//! LevelDB 1.23 (Debian's libleveldb, through `leveldb-sys`'s C bindings).
//!
//! The `leveldb` crate's safe wrapper cannot set a filter policy or the table
//! file size, so this module drives the C API directly: a bloom filter is
//! what makes LevelDB's `readrandom` comparable at all.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use leveldb_sys as ffi;

use super::Codec;
use crate::engine::{BenchResult, Engine, EngineConfig, EngineStats};

extern "C" {
    // In LevelDB's c.h since 1.21 but not declared by leveldb-sys 2.0.9.
    fn leveldb_options_set_max_file_size(o: *mut ffi::leveldb_options_t, size: usize);
}

/// A LevelDB database driven through the benchmark's [`Engine`] trait.
pub struct LevelDbEngine {
    db: *mut ffi::leveldb_t,
    options: *mut ffi::leveldb_options_t,
    cache: *mut ffi::leveldb_cache_t,
    filter: *mut ffi::leveldb_filterpolicy_t,
    ro: *mut ffi::leveldb_readoptions_t,
    wo: *mut ffi::leveldb_writeoptions_t,
    // Key + value bytes handed to put/delete (Strata's user-bytes definition).
    user_bytes: AtomicU64,
    mapping: String,
    path: PathBuf,
}

// SAFETY: leveldb_t is documented thread-safe; the option, cache and filter
// handles are only read after open and live until Drop.
unsafe impl Send for LevelDbEngine {}
// SAFETY: as above; every call takes its own iterator or error slot.
unsafe impl Sync for LevelDbEngine {}

/// Turns a LevelDB error slot into a `Result`, freeing the C string.
fn check(err: *mut c_char, what: &str) -> BenchResult<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: LevelDB sets the slot to a NUL-terminated malloc'd string.
    let msg = unsafe { CStr::from_ptr(err) }.to_string_lossy().into_owned();
    // SAFETY: allocated by LevelDB, freed once.
    unsafe { ffi::leveldb_free(err.cast::<c_void>()) };
    Err(format!("leveldb {what}: {msg}"))
}

impl LevelDbEngine {
    /// Opens (creating if needed) a LevelDB database with the benchmark's settings.
    pub fn open(cfg: &EngineConfig) -> BenchResult<Self> {
        let codec = Codec::parse(&cfg.compression)?;
        let (compression, compression_note) = match codec {
            Codec::None => (ffi::Compression::No, "none"),
            Codec::Lz4 => (ffi::Compression::Snappy, "snappy (LevelDB has no lz4; nearest fast codec)"),
            Codec::Zstd => (ffi::Compression::Snappy, "snappy (UNSUPPORTED zstd: LevelDB 1.23 has none)"),
        };
        // LevelDB's bloom policy takes whole bits per key.
        let bloom_bits = cfg.bloom_bits.round() as c_int;
        let cpath = CString::new(cfg.path.to_string_lossy().as_bytes())
            .map_err(|_| format!("leveldb: path {} contains NUL", cfg.path.display()))?;

        let mut me = LevelDbEngine {
            db: ptr::null_mut(),
            // SAFETY: plain constructors; each handle is destroyed in Drop.
            options: unsafe { ffi::leveldb_options_create() },
            // Capacity 0 turns LevelDB's LRU off (no cache, as Strata's 0);
            // a null cache would get LevelDB's 8 MiB default instead.
            cache: unsafe { ffi::leveldb_cache_create_lru(cfg.cache_size) },
            filter: if bloom_bits > 0 {
                unsafe { ffi::leveldb_filterpolicy_create_bloom(bloom_bits) }
            } else {
                ptr::null_mut()
            },
            ro: unsafe { ffi::leveldb_readoptions_create() },
            wo: unsafe { ffi::leveldb_writeoptions_create() },
            user_bytes: AtomicU64::new(0),
            mapping: format!(
                "leveldb 1.23: cache=LRU({}) filter_policy={} write_buffer_size={} max_file_size={} \
                 compression={} block_size=4096 block_restart_interval=16 max_open_files={} sync={} \
                 verify_checksums=false (LevelDB default, as its db_bench){}{}{}{}; fixed in LevelDB: \
                 level0 triggers 4/8/12, level base 10 MiB, 7 levels, 1 background thread, \
                 seek compaction on (allowed_seeks), flushes placed down to L2 (kMaxMemCompactLevel){}",
                cfg.cache_size,
                if bloom_bits > 0 { format!("bloom({bloom_bits})") } else { "none".into() },
                cfg.write_buffer_size,
                cfg.max_file_size,
                compression_note,
                crate::strata_defaults::MAX_OPEN_FILES,
                cfg.sync,
                if cfg.use_direct_reads {
                    " use_direct_reads=UNSUPPORTED (reads use the page cache)"
                } else {
                    ""
                },
                if cfg.row_cache_size > 0 { " row_cache=UNSUPPORTED (LevelDB has none)" } else { "" },
                if cfg.compaction_warmup { " compaction_warmup=UNSUPPORTED" } else { "" },
                if cfg.level_multiplier != 10.0 {
                    " max_bytes_for_level_multiplier=UNSUPPORTED (fixed at 10)"
                } else {
                    ""
                },
                if cfg.seek_compaction && cfg.max_mem_compaction_level == 2 {
                    ""
                } else {
                    " (so --seek_compaction=false or --max_mem_compaction_level other than 2 are UNSUPPORTED)"
                },
            ) + &cfg.peer_unsupported_notes()
                + cfg.peer_subcompactions_note()
                + &cfg.peer_prefix_note()
                + if cfg.pin_slice { " pin_slice=UNSUPPORTED (the C API copies every value)" } else { "" },
            path: cfg.path.clone(),
        };
        let o = me.options;
        // SAFETY: `o` and the handles it points at are live until Drop.
        unsafe {
            ffi::leveldb_options_set_create_if_missing(o, 1);
            ffi::leveldb_options_set_cache(o, me.cache);
            if !me.filter.is_null() {
                ffi::leveldb_options_set_filter_policy(o, me.filter);
            }
            ffi::leveldb_options_set_write_buffer_size(o, cfg.write_buffer_size);
            leveldb_options_set_max_file_size(o, cfg.max_file_size as usize);
            ffi::leveldb_options_set_compression(o, compression);
            ffi::leveldb_options_set_block_size(o, crate::strata_defaults::BLOCK_SIZE);
            ffi::leveldb_options_set_block_restart_interval(
                o,
                crate::strata_defaults::BLOCK_RESTART_INTERVAL,
            );
            ffi::leveldb_options_set_max_open_files(o, crate::strata_defaults::MAX_OPEN_FILES);
            ffi::leveldb_writeoptions_set_sync(me.wo, u8::from(cfg.sync));
        }
        let mut err = ptr::null_mut();
        // SAFETY: valid options and NUL-terminated path; err is an out slot.
        me.db = unsafe { ffi::leveldb_open(o, cpath.as_ptr(), &mut err) };
        check(err, &format!("open {}", cfg.path.display()))?;
        if me.db.is_null() {
            return Err(format!("leveldb open {}: no handle", cfg.path.display()));
        }
        Ok(me)
    }

    /// A `leveldb.*` property, e.g. `leveldb.stats`.
    pub fn property(&self, name: &str) -> Option<String> {
        let cname = CString::new(name).ok()?;
        // SAFETY: open db, NUL-terminated name; result is malloc'd or null.
        let p = unsafe { ffi::leveldb_property_value(self.db, cname.as_ptr()) };
        if p.is_null() {
            return None;
        }
        // SAFETY: NUL-terminated string owned by us, freed once.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        unsafe { ffi::leveldb_free(p.cast::<c_void>()) };
        Some(s)
    }
}

/// Sums the `Write(MB)` column of `leveldb.stats` (flush output counts
/// towards level 0), in bytes. LevelDB prints whole MiB per level.
pub fn stats_bytes_written(stats: &str) -> Option<u64> {
    let mut lines = stats.lines().skip_while(|l| !l.starts_with("----"));
    lines.next()?;
    let mut mib = 0.0;
    for line in lines {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() != 6 {
            break;
        }
        mib += cols[5].parse::<f64>().ok()?;
    }
    Some((mib * 1048576.0) as u64)
}

impl Engine for LevelDbEngine {
    fn name(&self) -> String {
        "leveldb".to_string()
    }
    fn put(&self, key: &[u8], value: &[u8]) -> BenchResult<()> {
        self.user_bytes.fetch_add((key.len() + value.len()) as u64, Relaxed);
        let mut err = ptr::null_mut();
        // SAFETY: pointers and lengths describe live slices.
        unsafe {
            ffi::leveldb_put(
                self.db,
                self.wo,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            )
        };
        check(err, "put")
    }
    fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>> {
        let (mut err, mut len) = (ptr::null_mut(), 0usize);
        // SAFETY: as put; the returned buffer is malloc'd by LevelDB.
        let p =
            unsafe { ffi::leveldb_get(self.db, self.ro, key.as_ptr().cast(), key.len(), &mut len, &mut err) };
        check(err, "get")?;
        if p.is_null() {
            return Ok(None);
        }
        // SAFETY: `p` holds `len` bytes; copied, then freed once.
        let v = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }.to_vec();
        unsafe { ffi::leveldb_free(p.cast::<c_void>()) };
        Ok(Some(v))
    }
    fn delete(&self, key: &[u8]) -> BenchResult<()> {
        self.user_bytes.fetch_add(key.len() as u64, Relaxed);
        let mut err = ptr::null_mut();
        // SAFETY: as put.
        unsafe { ffi::leveldb_delete(self.db, self.wo, key.as_ptr().cast(), key.len(), &mut err) };
        check(err, "delete")
    }
    fn scan_keep_last(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        n: usize,
        mut last: Option<&mut Vec<u8>>,
    ) -> BenchResult<(usize, usize)> {
        let (mut count, mut bytes) = (0, 0);
        // SAFETY: iterator created, used and destroyed on this thread only;
        // key/value pointers are read before the next move.
        unsafe {
            let it = ffi::leveldb_create_iterator(self.db, self.ro);
            ffi::leveldb_iter_seek(it, start.as_ptr().cast(), start.len());
            while count < n && ffi::leveldb_iter_valid(it) != 0 {
                // leveldb-sys declares the length out-params `*const`, but
                // LevelDB writes them: pass pointers to mutable locals.
                let (mut kl, mut vl) = (0usize, 0usize);
                let kp = ffi::leveldb_iter_key(it, (&raw mut kl).cast_const());
                // LevelDB has no upper bound in its read options: stop here.
                if end.is_some_and(|e| std::slice::from_raw_parts(kp.cast::<u8>(), kl) >= e) {
                    break;
                }
                ffi::leveldb_iter_value(it, (&raw mut vl).cast_const());
                bytes += kl + vl;
                if count + 1 == n {
                    if let Some(l) = last.take() {
                        l.clear();
                        l.extend_from_slice(std::slice::from_raw_parts(kp.cast::<u8>(), kl));
                    }
                }
                count += 1;
                ffi::leveldb_iter_next(it);
            }
            let mut err: *const c_char = ptr::null();
            ffi::leveldb_iter_get_error(it, (&raw mut err).cast_const());
            ffi::leveldb_iter_destroy(it);
            check(err.cast_mut(), "scan")?;
        }
        Ok((count, bytes))
    }
    fn flush(&self) -> BenchResult<()> {
        // LevelDB has no Flush(); CompactRange flushes the memtable and waits,
        // then compacts only files overlapping ["", ""] — none, as benchmark
        // keys are never empty.
        let empty = b"".as_ptr().cast::<c_char>();
        // SAFETY: non-null zero-length keys.
        unsafe { ffi::leveldb_compact_range(self.db, empty, 0, empty, 0) };
        Ok(())
    }
    fn stats(&self) -> EngineStats {
        let user = self.user_bytes.load(Relaxed);
        let written = self.property("leveldb.stats").as_deref().and_then(stats_bytes_written);
        EngineStats {
            // LevelDB counts no cache hits or misses, nor stall time.
            cache_hits: None,
            cache_misses: None,
            write_amplification: written.map(|w| if user == 0 { 0.0 } else { w as f64 / user as f64 }),
            stall_micros: None,
            // kNumLevels is 7 in LevelDB.
            levels_in_use: (0..7)
                .filter(|l| {
                    let n = self.property(&format!("leveldb.num-files-at-level{l}"));
                    n.and_then(|n| n.trim().parse::<u64>().ok()).unwrap_or(0) > 0
                })
                .max()
                .or(Some(0)),
            buffer_bytes: None,
            gets: None,
            get_table_probes: None,
            iter_seeks: None,
            iter_tables_opened: None,
            compaction_bytes_read: None,
            compaction_stages: None,
            // The simulated drive sits under Strata only.
            drive: None,
        }
    }
    fn wait_for_compactions(&self) -> BenchResult<()> {
        self.flush()?;
        // LevelDB cannot tell whether a compaction is pending: wait until its
        // per-level statistics stop changing for three polls in a row.
        let mut last = String::new();
        let mut same = 0;
        while same < 3 {
            std::thread::sleep(std::time::Duration::from_millis(500));
            let now = self.property("leveldb.stats").unwrap_or_default();
            same = if now == last { same + 1 } else { 0 };
            last = now;
        }
        Ok(())
    }
    fn stats_text(&self) -> String {
        self.property("leveldb.stats").unwrap_or_default()
    }
    fn option_mapping(&self) -> String {
        self.mapping.clone()
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LevelDbEngine {
    fn drop(&mut self) {
        // SAFETY: each handle was created once above; the db goes first since
        // it uses the others.
        unsafe {
            if !self.db.is_null() {
                ffi::leveldb_close(self.db);
            }
            ffi::leveldb_options_destroy(self.options);
            ffi::leveldb_readoptions_destroy(self.ro);
            ffi::leveldb_writeoptions_destroy(self.wo);
            ffi::leveldb_cache_destroy(self.cache);
            if !self.filter.is_null() {
                ffi::leveldb_filterpolicy_destroy(self.filter);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_leveldb_stats_write_column() {
        let text = "                               Compactions\n\
                    Level  Files Size(MB) Time(sec) Read(MB) Write(MB)\n\
                    --------------------------------------------------\n  \
                    0        2        4         0        0         6\n  \
                    1        3        5         1        7         5\n";
        assert_eq!(stats_bytes_written(text), Some(11 * 1048576));
        assert_eq!(stats_bytes_written(""), None);
    }
}
