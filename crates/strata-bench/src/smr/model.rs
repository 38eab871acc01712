//! A simulated disk drive, conventional or shingled (SMR), for the LWC
//! paper's experiments. It sees every write and read the engine issues (as
//! the VFS layer in [`super::SmrVfs`] hands them on), places each file's bytes
//! on the drive's address space the way its [`Placement`] says, and counts
//! what the drive would do: the bytes it writes to the medium, the bands it
//! has to read and rewrite, its seeks, and the seconds it would be busy.
//! Nothing here touches a disk; the data itself lives in the wrapped file
//! system. Written by hand because it *is* the experiment: no crate models
//! shingled bands.
//!
//! The shingled drive is drive-managed, as the slides' Seagate ST5000AS0011
//! (Skylight, FAST '15): the address space is cut into bands; a band can be
//! written only at its write pointer, since a track written overlaps the
//! next. A write behind the write pointer goes to the persistent cache (a
//! log on the medium); when the cache is full, every band with cached data
//! is cleaned — read whole, merged with its cached writes and written back
//! whole (a read-modify-write). The drive cannot know which blocks the file
//! system freed, so a band once written stays "full" to it; with
//! [`Placement::BandPerFile`] the host owns whole bands (LWC-store's and
//! SMRDB's layout) and resets a band's write pointer when it frees the
//! band's last file, as a host-managed drive's zone reset does.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// File-system allocation unit.
pub const BLOCK: u64 = 4096;
/// Bytes a file system reserves for a growing file at a time (ext4's
/// delayed allocation and preallocation give a file written in one go long
/// contiguous extents, not one per write).
pub const ALLOC_CHUNK: u64 = 1 << 20;
/// Page-cache unit.
pub const PAGE: u64 = 64 << 10;
/// Address of the persistent cache (a region apart from every band).
const CACHE_BASE: u64 = 1 << 62;
/// Bytes the OS's write-back and the drive's write cache gather from one
/// sequential stream before the head moves elsewhere: writes of one file
/// (or of the persistent cache's log) cost one seek per this many bytes,
/// however the engine interleaves them with other files' writes.
pub const WRITEBACK: u64 = 4 << 20;

/// Where a file's bytes go on the drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A file system's allocator (LevelDB on ext4): each write goes to the
    /// free space after the file's last byte if free, else to the first
    /// free extent (lowest address) large enough, else past all used space.
    /// Space freed by deleted files is reused from the lowest address up.
    FileSystem,
    /// The store maps each file to bands of its own (LWC-store's DTable per
    /// band, SMRDB's band-sized tables): a file starts at the start of an
    /// empty band and appends at its end; a file longer than a band goes on
    /// in another empty band. A band is reset when its file is deleted.
    BandPerFile,
}

impl Placement {
    /// `fs` or `band`.
    pub fn name(self) -> &'static str {
        match self {
            Placement::FileSystem => "fs",
            Placement::BandPerFile => "band",
        }
    }
}

/// Shingled recording: bands and the persistent cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shingled {
    /// Bytes per band (a multiple of [`BLOCK`]).
    pub band_size: u64,
    /// Bytes the persistent cache holds before it is cleaned.
    pub cache_size: u64,
}

/// A drive's shape and speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriveConfig {
    /// `None`: a conventional (CMR) drive that writes in place.
    pub shingled: Option<Shingled>,
    /// Bytes of the OS page cache in front of the drive: what was written or
    /// read lately is read again without the drive (LRU of [`PAGE`] chunks).
    pub page_cache: u64,
    /// How files are laid out on it.
    pub placement: Placement,
    /// Seconds per seek (head move plus half a rotation).
    pub seek_secs: f64,
    /// Media transfer rate, bytes per second.
    pub bandwidth: f64,
}

impl DriveConfig {
    /// A 5 900 rpm desktop drive like the slides' ST5000AS0011 / ST1000DM003:
    /// 12 ms per seek (8.5 ms seek and half a rotation), 150 MB/s.
    pub fn desktop(shingled: Option<Shingled>, placement: Placement, page_cache: u64) -> Self {
        DriveConfig { shingled, page_cache, placement, seek_secs: 0.012, bandwidth: 150e6 }
    }
}

/// What the drive did, since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DriveStats {
    /// Bytes the host (the engine) wrote.
    pub host_written: u64,
    /// Bytes the host read.
    pub host_read: u64,
    /// Read requests the page cache answered whole.
    pub page_cache_hits: u64,
    /// Bytes written to the medium: in place, to the persistent cache, and
    /// by band rewrites.
    pub media_written: u64,
    /// Bytes read from the medium (host reads and band cleaning).
    pub media_read: u64,
    /// Bytes of writes that landed behind a band's write pointer (cached).
    pub cached: u64,
    /// Bands read and rewritten whole by cache cleaning.
    pub band_rewrites: u64,
    /// Read requests the host made.
    pub reads: u64,
    /// Head moves.
    pub seeks: u64,
    /// Seconds the drive would have been busy (seeks plus transfers; one
    /// request at a time).
    pub busy_secs: f64,
}

impl DriveStats {
    /// What the drive did between `before` and these counters (none if
    /// `before` is from a later moment).
    pub fn since(&self, before: &DriveStats) -> DriveStats {
        DriveStats {
            host_written: self.host_written.saturating_sub(before.host_written),
            host_read: self.host_read.saturating_sub(before.host_read),
            page_cache_hits: self.page_cache_hits.saturating_sub(before.page_cache_hits),
            media_written: self.media_written.saturating_sub(before.media_written),
            media_read: self.media_read.saturating_sub(before.media_read),
            cached: self.cached.saturating_sub(before.cached),
            band_rewrites: self.band_rewrites.saturating_sub(before.band_rewrites),
            reads: self.reads.saturating_sub(before.reads),
            seeks: self.seeks.saturating_sub(before.seeks),
            busy_secs: (self.busy_secs - before.busy_secs).max(0.0),
        }
    }

    /// Auxiliary write amplification: media bytes written per host byte
    /// (1 on a conventional drive).
    pub fn awa(&self) -> f64 {
        if self.host_written == 0 {
            return 1.0;
        }
        self.media_written as f64 / self.host_written as f64
    }
}

/// A file's place on the drive.
#[derive(Debug, Default)]
struct FileMap {
    /// Extents `(address, length)` in file order.
    extents: Vec<(u64, u64)>,
    /// Sum of the extents' lengths (a multiple of [`BLOCK`]).
    allocated: u64,
    /// Bytes written.
    len: u64,
}

/// An identifier of a file on the drive (the VFS maps names to it).
pub type FileId = u64;

/// The drive's state. Not thread-safe; the VFS holds it under a lock.
#[derive(Debug)]
pub struct Drive {
    cfg: DriveConfig,
    files: HashMap<FileId, FileMap>,
    next_id: FileId,
    /// Free extents below `end`, `start -> length` (coalesced).
    free: BTreeMap<u64, u64>,
    /// Everything at or past this address is unused.
    end: u64,
    /// Band -> write pointer (offset in the band); missing = 0.
    wp: HashMap<u64, u64>,
    /// Band -> live bytes (allocated to files).
    live: HashMap<u64, u64>,
    /// Bands below `end / band_size` holding no file (band placement).
    empty_bands: BTreeSet<u64>,
    /// Band -> bytes waiting in the persistent cache.
    dirty: BTreeMap<u64, u64>,
    /// Sum of `dirty`.
    cache_used: u64,
    /// The OS page cache: `(file, page) -> last use`, and its LRU order.
    pages: HashMap<(FileId, u64), u64>,
    lru: BTreeMap<u64, (FileId, u64)>,
    tick: u64,
    /// Where the head is (for reads, which go one request at a time).
    head: u64,
    /// Write streams (a file's in-place writes, or the cache log): the
    /// address after each stream's last write and its bytes since its last
    /// seek. Keyed by that next address, so a write that continues a stream
    /// finds it.
    streams: HashMap<u64, u64>,
    stats: DriveStats,
}

impl Drive {
    /// An empty drive.
    pub fn new(cfg: DriveConfig) -> Self {
        Drive {
            cfg,
            files: HashMap::new(),
            next_id: 1,
            free: BTreeMap::new(),
            end: 0,
            wp: HashMap::new(),
            live: HashMap::new(),
            empty_bands: BTreeSet::new(),
            dirty: BTreeMap::new(),
            cache_used: 0,
            pages: HashMap::new(),
            lru: BTreeMap::new(),
            tick: 0,
            head: 0,
            streams: HashMap::new(),
            stats: DriveStats::default(),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> DriveConfig {
        self.cfg
    }

    /// The counters so far.
    pub fn stats(&self) -> DriveStats {
        self.stats
    }

    /// A new, empty file.
    pub fn create(&mut self) -> FileId {
        let id = self.next_id;
        self.next_id += 1;
        self.files.insert(id, FileMap::default());
        id
    }

    /// A file that already holds `len` bytes the drive never saw written
    /// (opened from an earlier run): placed, not charged.
    pub fn adopt(&mut self, len: u64) -> FileId {
        let id = self.create();
        self.allocate(id, len);
        if let Some(f) = self.files.get_mut(&id) {
            f.len = len;
        }
        id
    }

    /// Bytes file `id` holds.
    pub fn len(&self, id: FileId) -> u64 {
        self.files.get(&id).map_or(0, |f| f.len)
    }

    /// The host appends `n` bytes to file `id`.
    pub fn append(&mut self, id: FileId, n: u64) {
        let Some(start) = self.files.get(&id).map(|f| f.len) else { return };
        self.allocate(id, start + n);
        for (addr, len) in self.pieces(id, start, n) {
            self.media_write(addr, len);
        }
        self.cache_pages(id, start, n);
        if let Some(f) = self.files.get_mut(&id) {
            f.len = start + n;
        }
        self.stats.host_written += n;
    }

    /// The host reads `n` bytes of file `id` at `offset` (past the end is
    /// not charged).
    pub fn read(&mut self, id: FileId, offset: u64, n: u64) {
        self.stats.host_read += n;
        self.stats.reads += 1;
        if self.cached_pages(id, offset, n) {
            self.stats.page_cache_hits += 1;
            return;
        }
        // A miss reads whole pages (the kernel's smallest readahead here).
        self.cache_pages(id, offset, n);
        let pages = Self::page_range(offset, n);
        let (from, to) = (pages.start * PAGE, (pages.end * PAGE).min(self.len(id).max(offset + n)));
        for (addr, len) in self.pieces(id, from, to - from) {
            self.seek_to(addr);
            self.transfer(len);
            self.head = addr + len;
            self.stats.media_read += len;
        }
    }

    /// The pages of file `id` that `[offset, offset + n)` touches.
    fn page_range(offset: u64, n: u64) -> std::ops::Range<u64> {
        offset / PAGE..(offset + n.max(1)).div_ceil(PAGE)
    }

    /// True if every page of the range is in the page cache (each is
    /// refreshed).
    fn cached_pages(&mut self, id: FileId, offset: u64, n: u64) -> bool {
        if Self::page_range(offset, n).any(|p| !self.pages.contains_key(&(id, p))) {
            return false;
        }
        self.cache_pages(id, offset, n);
        true
    }

    /// Puts the range's pages in the page cache, evicting the least
    /// recently used beyond its size.
    fn cache_pages(&mut self, id: FileId, offset: u64, n: u64) {
        let cap = self.cfg.page_cache / PAGE;
        if cap == 0 {
            return;
        }
        for p in Self::page_range(offset, n) {
            self.tick += 1;
            if let Some(old) = self.pages.insert((id, p), self.tick) {
                self.lru.remove(&old);
            }
            self.lru.insert(self.tick, (id, p));
        }
        while self.pages.len() as u64 > cap {
            let Some((_, key)) = self.lru.pop_first() else { break };
            self.pages.remove(&key);
        }
    }

    /// File `id` is cut to `len` bytes; whole blocks past it are freed.
    pub fn truncate(&mut self, id: FileId, len: u64) {
        let Some(f) = self.files.get_mut(&id) else { return };
        f.len = f.len.min(len);
        let keep = len.div_ceil(BLOCK) * BLOCK;
        let mut freed = Vec::new();
        let mut at = 0;
        f.extents.retain_mut(|(addr, elen)| {
            let (from, to) = (at, at + *elen);
            at = to;
            if from >= keep {
                freed.push((*addr, *elen));
                false
            } else {
                if to > keep {
                    freed.push((*addr + (keep - from), to - keep));
                    *elen = keep - from;
                }
                true
            }
        });
        f.allocated = f.allocated.min(keep);
        for (addr, len) in freed {
            self.release(addr, len);
        }
    }

    /// File `id` is deleted: its space is free.
    pub fn delete(&mut self, id: FileId) {
        if let Some(f) = self.files.remove(&id) {
            for (addr, len) in f.extents {
                self.release(addr, len);
            }
        }
    }

    /// Drive addresses of file bytes `[offset, offset + n)`, clipped to what
    /// is allocated.
    fn pieces(&self, id: FileId, offset: u64, n: u64) -> Vec<(u64, u64)> {
        let Some(f) = self.files.get(&id) else { return Vec::new() };
        let (mut out, mut at, end) = (Vec::new(), 0, offset + n);
        for &(addr, len) in &f.extents {
            let (from, to) = (at, at + len);
            at = to;
            if to <= offset {
                continue;
            }
            if from >= end {
                break;
            }
            let lo = offset.max(from);
            let hi = end.min(to);
            out.push((addr + (lo - from), hi - lo));
        }
        out
    }

    /// Grows file `id`'s allocation to cover `len` bytes.
    fn allocate(&mut self, id: FileId, len: u64) {
        let Some(f) = self.files.get(&id) else { return };
        let want = len.div_ceil(BLOCK) * BLOCK;
        if want <= f.allocated {
            return;
        }
        let mut need = match self.cfg.placement {
            Placement::FileSystem => (want - f.allocated).max(ALLOC_CHUNK),
            Placement::BandPerFile => want - f.allocated,
        };
        let mut tail = f.extents.last().map(|&(a, l)| a + l);
        while need > 0 {
            let (addr, got) = match self.cfg.placement {
                Placement::FileSystem => self.take_fs(tail, need),
                Placement::BandPerFile => self.take_band(tail, need),
            };
            self.claim(id, addr, got);
            tail = Some(addr + got);
            need -= got;
        }
    }

    /// File-system placement of up to `need` bytes: right after `tail` if
    /// that space is free, else the first free extent that holds all of it,
    /// else past all used space. Files grow by [`ALLOC_CHUNK`] at least.
    fn take_fs(&mut self, tail: Option<u64>, need: u64) -> (u64, u64) {
        if let Some(t) = tail {
            if t == self.end {
                self.end += need;
                return (t, need);
            }
            if let Some(&len) = self.free.get(&t) {
                let got = len.min(need);
                self.take_free(t, got);
                return (t, got);
            }
        }
        if let Some((&start, _)) = self.free.iter().find(|(_, &len)| len >= need) {
            self.take_free(start, need);
            return (start, need);
        }
        let at = self.end;
        self.end += need;
        (at, need)
    }

    /// Band placement of up to `need` bytes: on in the band `tail` ends in
    /// (the file's own), else at the start of an empty band.
    fn take_band(&mut self, tail: Option<u64>, need: u64) -> (u64, u64) {
        let band = self.band_size();
        if let Some(t) = tail {
            let room = band - t % band;
            if t % band != 0 && room > 0 {
                let got = room.min(need);
                self.take_free(t, got);
                return (t, got);
            }
        }
        let b = match self.empty_bands.pop_first() {
            Some(b) => b,
            None => {
                let b = self.end.div_ceil(band);
                self.end = (b + 1) * band;
                // A fresh band is free space until claimed.
                self.free_insert(b * band, band);
                b
            }
        };
        let got = band.min(need);
        self.take_free(b * band, got);
        (b * band, got)
    }

    /// Band size for band placement (a conventional drive: 256 MiB units).
    fn band_size(&self) -> u64 {
        self.cfg.shingled.map_or(256 << 20, |s| s.band_size)
    }

    /// Removes `[start, start + len)` from the free extent holding it.
    fn take_free(&mut self, start: u64, len: u64) {
        let Some((&fs, &flen)) = self.free.range(..=start).next_back() else { return };
        if fs + flen < start + len {
            debug_assert!(false, "[{start}, +{len}) is not free");
            return;
        }
        self.free.remove(&fs);
        if fs < start {
            self.free.insert(fs, start - fs);
        }
        if fs + flen > start + len {
            self.free.insert(start + len, fs + flen - start - len);
        }
    }

    fn claim(&mut self, id: FileId, addr: u64, len: u64) {
        if let Some(f) = self.files.get_mut(&id) {
            match f.extents.last_mut() {
                Some((a, l)) if *a + *l == addr => *l += len,
                _ => f.extents.push((addr, len)),
            }
            f.allocated += len;
        }
        let band = self.band_size();
        let mut at = addr;
        while at < addr + len {
            let b = at / band;
            let n = ((b + 1) * band).min(addr + len) - at;
            *self.live.entry(b).or_default() += n;
            at += n;
        }
    }

    fn release(&mut self, addr: u64, len: u64) {
        let band = self.band_size();
        let mut at = addr;
        while at < addr + len {
            let b = at / band;
            let n = ((b + 1) * band).min(addr + len) - at;
            let live = self.live.entry(b).or_default();
            *live = live.saturating_sub(n);
            if *live == 0 && self.cfg.placement == Placement::BandPerFile {
                self.reset_band(b);
            }
            at += n;
        }
        self.free_insert(addr, len);
    }

    /// The host resets band `b` (host-managed zone reset): its write pointer
    /// goes back to its start and its cached writes are dropped.
    fn reset_band(&mut self, b: u64) {
        self.live.remove(&b);
        self.wp.remove(&b);
        if let Some(d) = self.dirty.remove(&b) {
            self.cache_used -= d;
        }
        self.empty_bands.insert(b);
    }

    /// Adds a free extent, merged with its neighbours.
    fn free_insert(&mut self, mut start: u64, mut len: u64) {
        if let Some((&ps, &pl)) = self.free.range(..start).next_back() {
            if ps + pl == start {
                self.free.remove(&ps);
                start = ps;
                len += pl;
            }
        }
        if let Some(nl) = self.free.remove(&(start + len)) {
            len += nl;
        }
        self.free.insert(start, len);
    }

    /// The medium takes `len` bytes for address `addr`.
    fn media_write(&mut self, addr: u64, len: u64) {
        let Some(sh) = self.cfg.shingled else {
            self.write_stream(addr, len);
            self.stats.media_written += len;
            return;
        };
        let mut at = addr;
        while at < addr + len {
            let b = at / sh.band_size;
            let off = at % sh.band_size;
            let n = (sh.band_size - off).min(addr + len - at);
            let wp = self.wp.get(&b).copied().unwrap_or(0);
            if off >= wp {
                self.write_stream(at, n);
                self.wp.insert(b, off + n);
            } else {
                self.write_stream(CACHE_BASE + self.cache_used, n);
                self.stats.cached += n;
                *self.dirty.entry(b).or_default() += n;
                self.cache_used += n;
            }
            self.stats.media_written += n;
            at += n;
        }
        if self.cache_used > sh.cache_size {
            self.clean(sh);
        }
    }

    /// Cleans the persistent cache: every band with cached writes is read,
    /// merged with them and written back whole, and is full afterwards.
    fn clean(&mut self, sh: Shingled) {
        for (b, bytes) in std::mem::take(&mut self.dirty) {
            self.seek_to(b * sh.band_size);
            self.transfer(sh.band_size);
            self.transfer(sh.band_size);
            self.head = (b + 1) * sh.band_size;
            self.stats.media_read += sh.band_size + bytes;
            self.stats.media_written += sh.band_size;
            self.stats.band_rewrites += 1;
            self.wp.insert(b, sh.band_size);
        }
        // Reading the cached writes back: one pass over the cache log.
        self.seek_to(CACHE_BASE);
        self.transfer(self.cache_used);
        self.cache_used = 0;
        self.head = CACHE_BASE;
        self.streams.clear();
    }

    /// A write of `len` bytes at `addr`: a seek when it starts a stream or
    /// its stream has gathered [`WRITEBACK`] bytes since the last one.
    fn write_stream(&mut self, addr: u64, len: u64) {
        let since = match self.streams.remove(&addr) {
            Some(b) if b + len <= WRITEBACK => b + len,
            _ => {
                self.stats.seeks += 1;
                self.stats.busy_secs += self.cfg.seek_secs;
                len
            }
        };
        self.transfer(len);
        // The head is elsewhere for the next read.
        self.head = u64::MAX;
        if self.streams.len() >= 4096 {
            // Streams of deleted files; the next write of a live one seeks once.
            self.streams.clear();
        }
        self.streams.insert(addr + len, since);
    }

    fn seek_to(&mut self, addr: u64) {
        if self.head != addr {
            self.stats.seeks += 1;
            self.stats.busy_secs += self.cfg.seek_secs;
        }
    }

    fn transfer(&mut self, bytes: u64) {
        self.stats.busy_secs += bytes as f64 / self.cfg.bandwidth;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn smr(placement: Placement, band: u64, cache: u64) -> Drive {
        Drive::new(DriveConfig::desktop(Some(Shingled { band_size: band, cache_size: cache }), placement, 0))
    }

    #[test]
    fn sequential_files_on_a_fresh_drive_cost_no_more_than_they_write() {
        let mut d = smr(Placement::FileSystem, 4 * MIB, 8 * MIB);
        for _ in 0..10 {
            let f = d.create();
            for _ in 0..16 {
                d.append(f, 64 << 10);
            }
        }
        let s = d.stats();
        assert_eq!(s.host_written, 10 * MIB);
        assert_eq!(s.media_written, 10 * MIB, "{s:?}");
        assert_eq!((s.cached, s.band_rewrites), (0, 0));
        assert_eq!(s.seeks, 3, "one file after another: one stream, a seek per 4 MiB written back");
    }

    #[test]
    fn rewriting_freed_space_goes_through_the_cache_and_rewrites_bands() {
        let mut d = smr(Placement::FileSystem, 4 * MIB, 2 * MIB);
        // Eight 1 MiB files fill two bands; every other one is deleted.
        let files: Vec<_> = (0..8)
            .map(|_| {
                let f = d.create();
                d.append(f, MIB);
                f
            })
            .collect();
        for f in files.iter().step_by(2) {
            d.delete(*f);
        }
        let before = d.stats();
        // Three new 1 MiB files land in the holes, behind the write pointers.
        for _ in 0..3 {
            let f = d.create();
            d.append(f, MIB);
        }
        let s = d.stats();
        assert_eq!(s.host_written - before.host_written, 3 * MIB);
        assert_eq!(s.cached - before.cached, 3 * MIB, "every byte was behind a write pointer");
        assert_eq!(s.band_rewrites, 2, "the third MiB overflowed the 2 MiB cache: both bands cleaned");
        assert_eq!(s.media_written - before.media_written, 3 * MIB + 2 * 4 * MIB);
        assert!(s.awa() > 1.0);
    }

    #[test]
    fn band_placement_appends_at_the_write_pointer_and_resets_freed_bands() {
        let mut d = smr(Placement::BandPerFile, 4 * MIB, MIB);
        let a = d.create();
        let b = d.create();
        // Interleaved appends (LWC segments) each stay in the file's band.
        for _ in 0..3 {
            d.append(a, MIB);
            d.append(b, MIB);
        }
        d.delete(a);
        let c = d.create();
        d.append(c, 2 * MIB);
        let s = d.stats();
        assert_eq!(s.media_written, s.host_written, "{s:?}");
        assert_eq!((s.cached, s.band_rewrites), (0, 0));
        // `c` reused `a`'s band, reset when `a` went.
        assert_eq!(d.pieces(c, 0, 1), vec![(0, 1)]);
        // A file longer than a band goes on in another one.
        d.append(b, 2 * MIB);
        assert_eq!(d.len(b), 5 * MIB);
        assert_eq!(d.stats().media_written, d.stats().host_written);
    }

    #[test]
    fn a_conventional_drive_writes_in_place_and_charges_seeks() {
        let mut d = Drive::new(DriveConfig::desktop(None, Placement::FileSystem, 0));
        let a = d.create();
        d.append(a, MIB);
        d.delete(a);
        let b = d.create();
        d.append(b, MIB);
        d.read(b, 0, 4096);
        d.read(b, 512 << 10, 4096);
        let s = d.stats();
        assert_eq!(s.media_written, s.host_written);
        assert_eq!(s.media_read, 2 * PAGE, "a miss reads whole pages");
        // a's stream, b's (back at address 0), and each read.
        assert_eq!(s.seeks, 4, "{s:?}");
        let expected = 4.0 * 0.012 + (2 * MIB + 2 * PAGE) as f64 / 150e6;
        assert!((s.busy_secs - expected).abs() < 1e-9, "{} vs {expected}", s.busy_secs);
    }

    #[test]
    fn the_page_cache_answers_recent_pages_and_forgets_the_oldest() {
        let mut d = Drive::new(DriveConfig::desktop(None, Placement::FileSystem, 2 * PAGE));
        let a = d.create();
        d.append(a, 3 * PAGE);
        // Pages 1 and 2 are cached (written last); page 0 was evicted.
        d.read(a, PAGE, 10);
        d.read(a, 2 * PAGE + 5, 10);
        assert_eq!((d.stats().page_cache_hits, d.stats().media_read), (2, 0));
        d.read(a, 0, 10);
        assert_eq!((d.stats().page_cache_hits, d.stats().media_read), (2, PAGE));
        // Reading page 0 evicted page 1, the least recently used.
        d.read(a, 2 * PAGE, 10);
        d.read(a, PAGE, 10);
        assert_eq!((d.stats().page_cache_hits, d.stats().media_read), (3, 2 * PAGE));
    }

    #[test]
    fn truncate_frees_whole_blocks_past_the_cut() {
        let mut d = smr(Placement::FileSystem, 4 * MIB, MIB);
        let a = d.create();
        d.append(a, 10 * BLOCK);
        d.truncate(a, 3 * BLOCK + 1);
        assert_eq!(d.len(a), 3 * BLOCK + 1);
        assert_eq!(d.free.get(&(4 * BLOCK)), Some(&(ALLOC_CHUNK - 4 * BLOCK)), "the rest of its first chunk");
        // The next append continues in the freed space right after the file.
        d.append(a, BLOCK);
        assert_eq!(d.pieces(a, 0, d.len(a)), vec![(0, 4 * BLOCK + 1)]);
    }
}
