//! Data blocks of a table sealed (compressed and checksummed) and written off
//! the builder's thread: the compute and write stages of a pipelined
//! compaction.
//!
//! ```text
//!  builder thread          K seal threads             write thread
//!  (merge, build block) --> compress + checksum  -->  reorder by sequence,
//!        ^   jobs queue     (out of order)   sealed   append, index entry
//!        |                                    queue         |
//!        +------------------- credits ----------------------+
//! ```
//!
//! Blocks travel in batches of 64 KiB to 1 MiB (growing with the table,
//! [`batch_target`]). The writer returns a credit for
//! every batch in the file and the builder hands a batch over only while
//! fewer than `window` are in flight (plus the one being gathered): the memory
//! bound is that many raw batches plus their compressed forms. Waiting for every credit
//! is how the builder learns the exact file size (`settle`).
//! A failure in any stage ends every stage: the writer drops its queue, the
//! sealers' sends fail, the builder's next hand-over or `finish` fails and
//! joins every thread before it reports the first error.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};

use crate::error::{Error, Result};
use crate::options::kinds::CompressionType;
use crate::stats::StageTimes;
use crate::table::block::BlockBuilder;
use crate::table::format::{block_trailer, compress_block, BlockHandle, BLOCK_TRAILER_LEN};
use crate::table::observer::DataBlockObserver;
use crate::table::reader::ReadTime;
use crate::util::cpu_time::{thread_cpu_ns, thread_cpu_ns_since};
use crate::vfs::WritableFile;

/// A block's stored form: its compressed payload (none where the raw bytes
/// are stored as they are) and its trailer. The raw bytes are not copied, so
/// an uncompressed block goes to the file from the buffer it was built in.
struct SealedBlock {
    compressed: Option<Vec<u8>>,
    trailer: [u8; BLOCK_TRAILER_LEN],
}

impl SealedBlock {
    /// The payload as stored, given the raw block it was sealed from.
    fn stored<'a>(&'a self, raw: &'a [u8]) -> &'a [u8] {
        self.compressed.as_deref().unwrap_or(raw)
    }
}

/// Compresses `raw` (when that saves space) and computes the trailer.
fn seal_block(raw: &[u8], compression: CompressionType) -> Result<SealedBlock> {
    let (compressed, ty) = compress_block(raw, compression)?;
    let trailer = block_trailer(compressed.as_deref().unwrap_or(raw), ty);
    Ok(SealedBlock { compressed, trailer })
}

/// The file side of a table: appends data blocks in key order and builds the
/// index over them. Lives on the builder's thread (sequential) or the write
/// thread (pipelined).
pub(crate) struct DataWriter {
    pub(crate) file: Box<dyn WritableFile>,
    pub(crate) offset: u64,
    pub(crate) index_block: BlockBuilder,
    pub(crate) observer: Option<Box<dyn DataBlockObserver>>,
    pub(crate) num_data_blocks: u64,
    /// Where the stage times go (shared by a compaction's output tables).
    pub(crate) progress: Arc<Progress>,
    handle_buf: Vec<u8>,
}

impl DataWriter {
    pub(crate) fn new(file: Box<dyn WritableFile>) -> Self {
        let offset = file.len();
        DataWriter {
            file,
            offset,
            index_block: BlockBuilder::new(1),
            observer: None,
            num_data_blocks: 0,
            progress: Arc::default(),
            handle_buf: Vec::with_capacity(20),
        }
    }

    /// Appends any block (data, filter, properties, index) without copying it.
    pub(crate) fn write_block(&mut self, raw: &[u8], compression: CompressionType) -> Result<BlockHandle> {
        let sealed = seal_block(raw, compression)?;
        self.write_sealed(&sealed, raw)
    }

    /// [`Self::write_block`] for a data block on the builder's own thread,
    /// timing the compute and write parts for the statistics.
    pub(crate) fn write_data_block(
        &mut self,
        raw: &[u8],
        compression: CompressionType,
    ) -> Result<BlockHandle> {
        let t = Instant::now();
        let sealed = seal_block(raw, compression)?;
        let t2 = Instant::now();
        let handle = self.write_sealed(&sealed, raw)?;
        self.progress.write_ns.fetch_add(nanos_since(t2), Ordering::Relaxed);
        self.progress.compute_ns.fetch_add(nanos_between(t, t2), Ordering::Relaxed);
        Ok(handle)
    }

    /// Appends a block sealed from `raw` (here or on a seal thread).
    fn write_sealed(&mut self, block: &SealedBlock, raw: &[u8]) -> Result<BlockHandle> {
        let stored = block.stored(raw);
        self.file.append(stored)?;
        self.file.append(&block.trailer)?;
        let handle = BlockHandle { offset: self.offset, size: stored.len() as u64 };
        self.offset += (stored.len() + BLOCK_TRAILER_LEN) as u64;
        Ok(handle)
    }

    /// Records a written data block: its index entry and the observer's call.
    pub(crate) fn data_block_written(&mut self, handle: BlockHandle, first: &[u8], last: &[u8], raw: &[u8]) {
        if let Some(o) = &mut self.observer {
            o.data_block(handle, first, last, raw);
        }
        self.handle_buf.clear();
        handle.encode_to(&mut self.handle_buf);
        self.index_block.add(last, &self.handle_buf);
        self.num_data_blocks += 1;
    }
}

/// One finished, unsealed data block with its first and last keys.
struct RawBlock {
    raw: Vec<u8>,
    first: Vec<u8>,
    last: Vec<u8>,
}

/// Consecutive data blocks handed over together: one queue operation and one
/// thread wake-up per batch instead of per block (per-block hand-overs made
/// an uncompressed pipeline slower than the sequential path).
struct Job {
    seq: u64,
    blocks: Vec<RawBlock>,
}

struct Sealed {
    job: Job,
    blocks: Result<Vec<SealedBlock>>,
}

/// Raw bytes a batch gathers before it is handed to the seal threads: an
/// eighth of what the table has handed over so far, within these bounds. A
/// table's first batches are small, so its stages start early; a large
/// table's are large, because every hand-over costs thread wake-ups.
const MIN_BATCH_BYTES: usize = 64 << 10;
const MAX_BATCH_BYTES: usize = 1 << 20;

fn batch_target(raw_sent: u64) -> usize {
    usize::try_from(raw_sent / 8).unwrap_or(usize::MAX).clamp(MIN_BATCH_BYTES, MAX_BATCH_BYTES)
}

/// Bytes one pipeline's write stage has written, for the builder's
/// file-size estimate.
#[derive(Default, Debug)]
struct Written {
    bytes: AtomicU64,
    raw: AtomicU64,
}

/// Busy and waiting time per stage, shared by the tables of one flush or
/// compaction and read by its statistics.
#[derive(Default, Debug)]
pub(crate) struct Progress {
    /// Time the seal threads spent compressing and checksumming.
    pub(crate) compute_ns: AtomicU64,
    /// The write stage: the write thread's work, and tables' tails and syncs.
    pub(crate) write_ns: AtomicU64,
    /// Time the builder waited for a free slot (the stages behind it were full).
    pub(crate) producer_wait_ns: AtomicU64,
    /// Sub-task threads reading and merging (summed over them).
    pub(crate) subtask_ns: AtomicU64,
    /// The builder waiting for the next sub-task's entries.
    pub(crate) subtask_wait_ns: AtomicU64,
    pub(crate) subtasks: AtomicU64,
    /// Readahead reads for the merge (busy), and waits for a read thread.
    pub(crate) read_ns: AtomicU64,
    pub(crate) read_wait_ns: AtomicU64,
    /// Tables finished on threads of their own (`sink::OutputWriter`), and
    /// the merging thread's waits for them.
    pub(crate) finished_apart: AtomicU64,
    pub(crate) finish_wait_ns: AtomicU64,
    /// CPU time of every thread that worked for the task (`util::cpu_time`).
    pub(crate) cpu_ns: AtomicU64,
}

impl Progress {
    /// Adds this thread's readahead time since `before` (from
    /// `reader::read_time`) to the read stage.
    pub(crate) fn add_read_since(&self, before: ReadTime) {
        let now = crate::table::reader::read_time();
        self.read_ns.fetch_add(now.busy.saturating_sub(before.busy), Ordering::Relaxed);
        self.read_wait_ns.fetch_add(now.wait.saturating_sub(before.wait), Ordering::Relaxed);
        self.cpu_ns.fetch_add(now.cpu.saturating_sub(before.cpu), Ordering::Relaxed);
    }

    /// Adds `d` of write-stage work (appends, a table's tail, its sync).
    pub(crate) fn add_write(&self, d: Duration) {
        self.write_ns.fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Adds the CPU this thread used since `before` (a `thread_cpu_ns` on it).
    pub(crate) fn add_cpu_since(&self, before: u64) {
        self.cpu_ns.fetch_add(thread_cpu_ns_since(before), Ordering::Relaxed);
    }

    /// Runs `f` on this thread, adding the CPU it used to the task's.
    pub(crate) fn counting_cpu<T>(&self, f: impl FnOnce() -> T) -> T {
        let before = thread_cpu_ns();
        let r = f();
        self.add_cpu_since(before);
        r
    }

    pub(crate) fn times(&self) -> StageTimes {
        let d = |a: &AtomicU64| Duration::from_nanos(a.load(Ordering::Relaxed));
        StageTimes {
            compute: d(&self.compute_ns),
            write: d(&self.write_ns),
            merge_waiting: d(&self.producer_wait_ns),
            subtask_merge: d(&self.subtask_ns),
            subtask_waiting: d(&self.subtask_wait_ns),
            subtasks: self.subtasks.load(Ordering::Relaxed),
            read: d(&self.read_ns),
            read_waiting: d(&self.read_wait_ns),
            finished_apart: self.finished_apart.load(Ordering::Relaxed),
            finish_waiting: d(&self.finish_wait_ns),
            cpu: d(&self.cpu_ns),
        }
    }
}

/// The running stages of one table's pipeline.
pub(crate) struct BlockPipeline {
    jobs: Option<Sender<Job>>,
    credits: Receiver<()>,
    /// Batches handed over whose credit has not come back.
    in_flight: usize,
    window: usize,
    sealers: Vec<JoinHandle<()>>,
    writer: Option<JoinHandle<Result<DataWriter>>>,
    next_seq: u64,
    batch: Vec<RawBlock>,
    batch_bytes: usize,
    raw_sent: u64,
    /// [`Self::estimated_size`] as of the last block handed over. The
    /// builder asks for it after every entry; reading the write thread's
    /// counters each time bounced their cache line between the cores (4 % of
    /// an uncompressed merging thread's samples), and the estimate only moves
    /// by blocks.
    estimate: u64,
    progress: Arc<Progress>,
    written: Arc<Written>,
}

/// Batches in flight per pipeline: enough to keep every thread busy.
fn window(threads: usize) -> usize {
    2 + 2 * threads
}

fn spawn<T: Send + 'static>(name: &str, f: impl FnOnce() -> T + Send + 'static) -> Result<JoinHandle<T>> {
    std::thread::Builder::new().name(name.into()).spawn(f).map_err(Error::Io)
}

fn nanos_since(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn nanos_between(a: Instant, b: Instant) -> u64 {
    u64::try_from(b.duration_since(a).as_nanos()).unwrap_or(u64::MAX)
}

impl BlockPipeline {
    /// Starts `threads` seal threads and the write thread, which takes `writer`.
    pub(crate) fn start(writer: DataWriter, compression: CompressionType, threads: usize) -> Result<Self> {
        let threads = threads.max(1);
        let w = window(threads);
        let (jobs_tx, jobs_rx) = bounded::<Job>(w);
        let (sealed_tx, sealed_rx) = bounded::<Sealed>(w);
        let (credit_tx, credits) = bounded::<()>(w);
        let progress = Arc::clone(&writer.progress);
        let written = Arc::new(Written::default());
        let mut pipeline = BlockPipeline {
            jobs: Some(jobs_tx),
            credits,
            in_flight: 0,
            window: w,
            sealers: Vec::with_capacity(threads),
            writer: None,
            next_seq: 0,
            batch: Vec::new(),
            batch_bytes: 0,
            raw_sent: 0,
            estimate: 0,
            progress: progress.clone(),
            written: written.clone(),
        };
        for _ in 0..threads {
            let (rx, tx, p) = (jobs_rx.clone(), sealed_tx.clone(), progress.clone());
            pipeline.sealers.push(spawn("strata-seal", move || {
                p.counting_cpu(|| seal_loop(&rx, &tx, compression, &p));
            })?);
        }
        drop((jobs_rx, sealed_tx));
        pipeline.writer = Some(spawn("strata-write", move || {
            progress.counting_cpu(|| write_loop(writer, &sealed_rx, &credit_tx, &written))
        })?);
        Ok(pipeline)
    }

    /// Adds a finished data block to the batch, handing the batch to the seal
    /// threads once it holds [`batch_target`]. Fails if any stage has failed.
    pub(crate) fn submit(&mut self, raw: Vec<u8>, first: Vec<u8>, last: Vec<u8>) -> Result<()> {
        self.raw_sent += raw.len() as u64;
        self.batch_bytes += raw.len();
        self.batch.push(RawBlock { raw, first, last });
        if self.batch_bytes >= batch_target(self.raw_sent) {
            self.send_batch()?;
        }
        self.estimate = self.estimate_now();
        Ok(())
    }

    /// Hands the batch over; waits for a slot when `window` batches are in flight.
    fn send_batch(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        if self.in_flight >= self.window {
            self.take_credit()?;
        }
        let job = Job { seq: self.next_seq, blocks: std::mem::take(&mut self.batch) };
        self.batch_bytes = 0;
        self.next_seq += 1;
        let sent = self.jobs.as_ref().is_some_and(|j| j.send(job).is_ok());
        if sent {
            self.in_flight += 1;
            Ok(())
        } else {
            Err(Error::Io(std::io::Error::other("table seal stage stopped")))
        }
    }

    /// Waits for the writer to finish one batch handed over.
    fn take_credit(&mut self) -> Result<()> {
        let t = Instant::now();
        let got = self.credits.recv();
        self.progress.producer_wait_ns.fetch_add(nanos_since(t), Ordering::Relaxed);
        got.map_err(|_| Error::Io(std::io::Error::other("table write stage stopped")))?;
        self.in_flight -= 1;
        Ok(())
    }

    /// Hands over the gathered batch and waits until every block is in the
    /// file; returns the bytes written. Fails if any stage has failed.
    pub(crate) fn settle(&mut self) -> Result<u64> {
        self.send_batch()?;
        while self.in_flight > 0 {
            self.take_credit()?;
        }
        // Exact now: a table still under its target after settling must not
        // settle again on every entry until the next block refreshes it.
        self.estimate = self.estimate_now();
        Ok(self.estimate)
    }

    /// Written bytes plus the blocks in flight at the compression ratio seen
    /// so far, as of the last block handed over.
    pub(crate) fn estimated_size(&self) -> u64 {
        self.estimate
    }

    fn estimate_now(&self) -> u64 {
        let written = self.written.bytes.load(Ordering::Relaxed);
        let raw_written = self.written.raw.load(Ordering::Relaxed);
        let in_flight = self.raw_sent.saturating_sub(raw_written);
        let ratio = if raw_written == 0 { 1.0 } else { written as f64 / raw_written as f64 };
        written + (in_flight as f64 * ratio) as u64
    }

    /// Waits for every block to be written and every thread to end; returns
    /// the file side, or the first error of any stage.
    pub(crate) fn finish(mut self) -> Result<DataWriter> {
        let sent = self.send_batch();
        let joined = self.shutdown();
        // A stage's own error explains a failed hand-over better than the hand-over does.
        match (sent, joined) {
            (_, Err(e)) | (Err(e), Ok(_)) => Err(e),
            (Ok(()), Ok(w)) => Ok(w),
        }
    }

    fn shutdown(&mut self) -> Result<DataWriter> {
        self.jobs = None;
        let mut panicked = false;
        for h in self.sealers.drain(..) {
            panicked |= h.join().is_err();
        }
        let written = match self.writer.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) | None => Err(Error::Io(std::io::Error::other("table write thread panicked"))),
        };
        if panicked && written.is_ok() {
            return Err(Error::Io(std::io::Error::other("table seal thread panicked")));
        }
        written
    }
}

impl Drop for BlockPipeline {
    /// An abandoned table (an error elsewhere) still joins its threads, so no
    /// thread writes to a file its owner is about to remove.
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = self.shutdown();
        }
    }
}

fn seal_loop(jobs: &Receiver<Job>, sealed: &Sender<Sealed>, compression: CompressionType, p: &Progress) {
    for job in jobs.iter() {
        let t = Instant::now();
        let blocks = job.blocks.iter().map(|b| seal_block(&b.raw, compression)).collect::<Result<Vec<_>>>();
        p.compute_ns.fetch_add(nanos_since(t), Ordering::Relaxed);
        let failed = blocks.is_err();
        if sealed.send(Sealed { job, blocks }).is_err() || failed {
            return;
        }
    }
}

fn write_loop(
    mut w: DataWriter,
    sealed: &Receiver<Sealed>,
    credits: &Sender<()>,
    written: &Written,
) -> Result<DataWriter> {
    // Sealed blocks arrive out of order from several threads; they are
    // written strictly by sequence.
    let mut pending: BTreeMap<u64, Sealed> = BTreeMap::new();
    let mut next = 0u64;
    for s in sealed.iter() {
        // The stage's time is all it does between two arrivals: ordering,
        // appending, index entries, credits; not only the appends.
        let t = Instant::now();
        pending.insert(s.job.seq, s);
        while let Some(s) = pending.remove(&next) {
            for (block, b) in s.blocks?.iter().zip(&s.job.blocks) {
                let handle = w.write_sealed(block, &b.raw)?;
                w.data_block_written(handle, &b.first, &b.last, &b.raw);
                written.bytes.fetch_add(handle.size + BLOCK_TRAILER_LEN as u64, Ordering::Relaxed);
                written.raw.fetch_add(b.raw.len() as u64, Ordering::Relaxed);
            }
            next += 1;
            let _ = credits.send(());
        }
        w.progress.add_write(t.elapsed());
    }
    if !pending.is_empty() {
        return Err(Error::Io(std::io::Error::other(
            "a table seal thread stopped before its block was written",
        )));
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;
    use crate::key::{make_internal_key, ValueKind};
    use crate::options::kinds::CompactionPipeline;
    use crate::table::test_util::MemFile;
    use crate::table::{TableBuilder, TableBuilderOptions};

    const MODES: [CompactionPipeline; 4] = [
        CompactionPipeline::Sequential,
        CompactionPipeline::Pipelined,
        CompactionPipeline::Parallel { compute_threads: 2 },
        CompactionPipeline::Parallel { compute_threads: 3 },
    ];

    fn entries(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..n)
            .map(|i| {
                let k = make_internal_key(format!("key{i:07}").as_bytes(), i as u64 + 1, ValueKind::Put);
                // Compressible, but not uniformly, so block sizes differ.
                (k, format!("{i:x}").repeat(1 + i % 17).into_bytes())
            })
            .collect()
    }

    /// 512-byte blocks: many blocks, and batches, from few entries.
    fn small_blocks(mode: CompactionPipeline, compression: CompressionType) -> TableBuilderOptions {
        TableBuilderOptions { block_size: 512, compression, pipeline: mode, ..Default::default() }
    }

    fn build(
        mode: CompactionPipeline,
        compression: CompressionType,
        file: Box<dyn WritableFile>,
    ) -> Result<u64> {
        build_n(mode, compression, file, 5_000)
    }

    fn build_n(
        mode: CompactionPipeline,
        compression: CompressionType,
        file: Box<dyn WritableFile>,
        n: usize,
    ) -> Result<u64> {
        let mut b = TableBuilder::new(file, small_blocks(mode, compression));
        for (k, v) in entries(n) {
            b.add(&k, &v)?;
        }
        Ok(b.finish()?.file_size)
    }

    #[test]
    fn every_mode_writes_the_same_bytes() {
        for compression in [CompressionType::None, CompressionType::Lz4, CompressionType::Zstd(3)] {
            let mut first: Option<Vec<u8>> = None;
            for mode in MODES {
                let file = MemFile::default();
                let size = build(mode, compression, Box::new(file.clone())).unwrap();
                let bytes = file.bytes();
                assert_eq!(size, bytes.len() as u64);
                match &first {
                    None => first = Some(bytes),
                    Some(f) => assert!(f == &bytes, "{mode:?} {compression:?} wrote other bytes"),
                }
            }
        }
    }

    #[test]
    fn batches_grow_with_the_table_from_64_kib_to_1_mib() {
        assert_eq!(batch_target(0), MIN_BATCH_BYTES);
        assert_eq!(batch_target(512 << 10), 64 << 10);
        assert_eq!(batch_target(1 << 20), 128 << 10);
        assert_eq!(batch_target(8 << 20), MAX_BATCH_BYTES);
        assert_eq!(batch_target(u64::MAX), MAX_BATCH_BYTES);
    }

    /// Over 8 MiB of blocks: the batches grow to their largest on the way.
    #[test]
    fn a_table_whose_batches_grow_is_written_the_same_by_every_mode() {
        for compression in [CompressionType::None, CompressionType::Lz4] {
            let mut first: Option<Vec<u8>> = None;
            for mode in MODES {
                let file = MemFile::default();
                let size = build_n(mode, compression, Box::new(file.clone()), 400_000).unwrap();
                let bytes = file.bytes();
                assert_eq!(size, bytes.len() as u64);
                match &first {
                    None => {
                        let raw = compression == CompressionType::None;
                        assert!(!raw || size > 9 << 20, "{size} B: too few for the batches to grow");
                        first = Some(bytes)
                    }
                    Some(f) => assert!(f == &bytes, "{mode:?} {compression:?} wrote other bytes"),
                }
            }
        }
    }

    #[test]
    fn the_size_estimate_follows_the_compressed_size() {
        for mode in MODES {
            let mut b =
                TableBuilder::new(Box::new(MemFile::default()), small_blocks(mode, CompressionType::Lz4));
            // Large enough that batches were written before the end (before the
            // first one is, blocks in flight count at their raw size).
            for (k, v) in entries(40_000) {
                b.add(&k, &v).unwrap();
            }
            let estimate = b.estimated_file_size();
            let size = b.finish().unwrap().file_size;
            // Data blocks are nearly all of the file; blocks in flight are
            // estimated at the ratio so far.
            assert!(
                estimate as f64 > size as f64 * 0.7 && estimate <= size,
                "{mode:?}: {estimate} vs {size}"
            );
        }
    }

    /// A file whose sync takes at least [`SYNC`], as a device's does.
    struct SlowSync(MemFile);

    const SYNC: Duration = Duration::from_millis(20);

    impl WritableFile for SlowSync {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.0.append(data)
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            std::thread::sleep(SYNC);
            Ok(())
        }
        fn len(&self) -> u64 {
            WritableFile::len(&self.0)
        }
    }

    /// The write stage timed data-block appends only: a table's meta blocks,
    /// footer and sync fell outside every stage, and the stage model counted
    /// them as the merge's (a sequential task) or as no stage's (a pipeline).
    #[test]
    fn the_write_stage_times_the_table_s_tail_and_its_sync() {
        for mode in MODES {
            let file = Box::new(SlowSync(MemFile::default()));
            let mut b = TableBuilder::new(file, small_blocks(mode, CompressionType::Lz4));
            let progress = Arc::new(Progress::default());
            b.set_progress(Arc::clone(&progress));
            for (k, v) in entries(2_000) {
                b.add(&k, &v).unwrap();
            }
            b.finish().unwrap();
            let t = progress.times();
            assert!(t.write >= SYNC, "{mode:?}: {t:?}");
            // A pipeline's seal and write threads count their CPU; the
            // builder's own thread is its caller's to count.
            assert_eq!(t.cpu > Duration::ZERO, mode != CompactionPipeline::Sequential, "{mode:?}: {t:?}");
        }
    }

    /// A file whose `fail_at`-th append (and every later one) fails.
    struct FailingFile {
        inner: MemFile,
        appends: Arc<AtomicUsize>,
        fail_at: usize,
    }

    impl WritableFile for FailingFile {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            if self.appends.fetch_add(1, Ordering::SeqCst) >= self.fail_at {
                return Err(Error::Io(std::io::Error::other("injected write failure")));
            }
            self.inner.append(data)
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            WritableFile::len(&self.inner)
        }
    }

    #[test]
    fn a_write_failure_in_the_write_stage_fails_the_table_and_joins_every_thread() {
        for mode in MODES {
            for fail_at in [0, 1, 7, 100, 10_000] {
                let appends = Arc::new(AtomicUsize::new(0));
                let file = FailingFile { inner: MemFile::default(), appends: appends.clone(), fail_at };
                let r = build(mode, CompressionType::Lz4, Box::new(file));
                let n = appends.load(Ordering::SeqCst);
                if n > fail_at {
                    let e = r.unwrap_err();
                    assert!(e.to_string().contains("injected write failure"), "{mode:?} at {fail_at}: {e}");
                } else {
                    assert!(r.is_ok(), "{mode:?}: the table took {n} appends, fewer than {fail_at}");
                }
            }
        }
    }
}
