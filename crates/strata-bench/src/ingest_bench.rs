//! `strata-bench ingest`: loading sorted data by bulk ingestion (tables
//! written with an SST file writer, then `ingest_external_file`) against
//! loading it through write batches, flushed at the end so both leave the
//! data in tables. Strata, and with the `rocksdb` feature RocksDB, with the
//! same memory and table options.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;

use crate::engine::BenchResult;
use crate::gen::{format_key, ValueGen};

/// Flags of `strata-bench ingest`.
#[derive(Parser, Debug, Clone)]
#[command(name = "strata-bench ingest", about = "Bulk ingestion against write batches")]
pub struct IngestArgs {
    /// Engines, comma-separated: strata, rocksdb (the latter needs the `rocksdb` feature).
    #[arg(long, default_value = "strata")]
    pub engines: String,
    /// Records loaded.
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,
    /// Value bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Records per external file (and per ingestion call).
    #[arg(long, default_value_t = 250_000)]
    pub file_records: u64,
    /// Records per write batch.
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,
    /// Memtable bytes (each engine the same).
    #[arg(long, default_value_t = 64 << 20)]
    pub write_buffer_size: usize,
    /// Directory the databases are created in (default: a fresh temporary one).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// One record: key and value.
type Record = (Vec<u8>, Vec<u8>);

/// What loading needs of an engine; the two ways of loading are driven
/// below, the same for every engine.
trait Loader {
    /// Writes `records` as one write batch.
    fn write_batch(&self, records: &[Record]) -> BenchResult<()>;
    /// Flushes the memtable to tables.
    fn flush(&self) -> BenchResult<()>;
    /// Writes `records` (ascending keys) to an external table at `path`.
    fn write_file(&self, path: &Path, records: &[Record]) -> BenchResult<()>;
    /// Ingests the table at `path`, moving it.
    fn ingest(&self, path: &Path) -> BenchResult<()>;
    /// Reads a key back (to check the load).
    fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>>;
}

fn strata_options(args: &IngestArgs) -> strata::Options {
    strata::Options::default()
        .with_write_buffer_size(args.write_buffer_size)
        .with_compression(strata::CompressionType::None)
        .with_bloom_bits_per_key(10.0)
}

struct StrataLoader(strata::Db, strata::Options);

impl Loader for StrataLoader {
    fn write_batch(&self, records: &[Record]) -> BenchResult<()> {
        let mut b = strata::WriteBatch::new();
        for (k, v) in records {
            b.put(k, v);
        }
        self.0.write(b).map_err(|e| e.to_string())
    }

    fn flush(&self) -> BenchResult<()> {
        self.0.flush().map_err(|e| e.to_string())
    }

    fn write_file(&self, path: &Path, records: &[Record]) -> BenchResult<()> {
        let err = |e: strata::Error| e.to_string();
        let mut w = strata::SstFileWriter::create(path, &self.1).map_err(err)?;
        for (k, v) in records {
            w.put(k, v).map_err(err)?;
        }
        w.finish().map(drop).map_err(err)
    }

    fn ingest(&self, path: &Path) -> BenchResult<()> {
        let opts = strata::IngestExternalFileOptions::default().with_move_files(true);
        self.0.ingest_external_file(&[path], &opts).map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>> {
        self.0.get(key).map_err(|e| e.to_string())
    }
}

#[cfg(feature = "rocksdb")]
mod rocks {
    use std::path::Path;

    use super::{IngestArgs, Loader, Record};
    use crate::engine::BenchResult;

    pub fn options(args: &IngestArgs) -> rocksdb::Options {
        let mut table = rocksdb::BlockBasedOptions::default();
        table.set_bloom_filter(10.0, false);
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.set_block_based_table_factory(&table);
        opts.set_write_buffer_size(args.write_buffer_size);
        opts.set_compression_type(rocksdb::DBCompressionType::None);
        opts.set_max_background_jobs(2);
        opts
    }

    pub struct RocksLoader(pub rocksdb::DB, pub rocksdb::Options);

    impl Loader for RocksLoader {
        fn write_batch(&self, records: &[Record]) -> BenchResult<()> {
            let mut b = rocksdb::WriteBatch::default();
            for (k, v) in records {
                b.put(k, v);
            }
            self.0.write(b).map_err(|e| e.to_string())
        }

        fn flush(&self) -> BenchResult<()> {
            self.0.flush().map_err(|e| e.to_string())
        }

        fn write_file(&self, path: &Path, records: &[Record]) -> BenchResult<()> {
            let err = |e: rocksdb::Error| e.to_string();
            let mut w = rocksdb::SstFileWriter::create(&self.1);
            w.open(path).map_err(err)?;
            for (k, v) in records {
                w.put(k, v).map_err(err)?;
            }
            w.finish().map_err(err)
        }

        fn ingest(&self, path: &Path) -> BenchResult<()> {
            let mut opts = rocksdb::IngestExternalFileOptions::default();
            opts.set_move_files(true);
            self.0.ingest_external_file_opts(&opts, vec![path]).map_err(|e| e.to_string())
        }

        fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>> {
            self.0.get(key).map_err(|e| e.to_string())
        }
    }
}

fn open(engine: &str, args: &IngestArgs, path: &Path) -> BenchResult<Box<dyn Loader>> {
    Ok(match engine {
        "strata" => {
            let opts = strata_options(args);
            Box::new(StrataLoader(strata::Db::open(path, opts.clone()).map_err(|e| e.to_string())?, opts))
        }
        #[cfg(feature = "rocksdb")]
        "rocksdb" => {
            let opts = rocks::options(args);
            Box::new(rocks::RocksLoader(rocksdb::DB::open(&opts, path).map_err(|e| e.to_string())?, opts))
        }
        other => {
            return Err(format!(
                "unknown or not built-in engine {other:?} (rocksdb needs --features rocksdb)"
            ))
        }
    })
}

/// Loads `records` in write batches of `batch`, then flushes.
fn load_batches(db: &dyn Loader, records: &[Record], batch: usize) -> BenchResult<()> {
    for chunk in records.chunks(batch.max(1)) {
        db.write_batch(chunk)?;
    }
    db.flush()
}

/// Loads `records` as external files of `per_file` records under `dir`, each
/// ingested once written; returns the seconds spent writing the files.
fn load_files(db: &dyn Loader, records: &[Record], per_file: u64, dir: &Path) -> BenchResult<f64> {
    let mut writing = 0.0;
    for (n, chunk) in records.chunks(per_file.max(1) as usize).enumerate() {
        let path = dir.join(format!("{n}.sst"));
        let started = Instant::now();
        db.write_file(&path, chunk)?;
        writing += started.elapsed().as_secs_f64();
        db.ingest(&path)?;
    }
    Ok(writing)
}

/// One engine's rates, records per second.
#[derive(Debug, Clone)]
pub struct IngestResult {
    /// The engine.
    pub engine: String,
    /// Through write batches, flushed.
    pub batches_per_sec: f64,
    /// Through external files, writing them included.
    pub ingest_per_sec: f64,
    /// Seconds of the ingestion spent writing the files.
    pub file_write_secs: f64,
    /// Seconds of the ingestion spent in `ingest_external_file`.
    pub ingest_call_secs: f64,
}

/// Loads `num` records both ways into fresh databases, per engine. The
/// records are made before any clock starts.
pub fn run(args: &IngestArgs) -> BenchResult<Vec<IngestResult>> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let base = args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let mut values = ValueGen::new(1, 1.0);
    let records: Vec<Record> =
        (0..args.num).map(|i| (format_key(i, 16), values.next(args.value_size).to_vec())).collect();
    let probe = format_key(args.num / 2, 16);
    let mut rows = Vec::new();
    for engine in args.engines.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let db = open(engine, args, &base.join(format!("{engine}-batches")))?;
        let started = Instant::now();
        load_batches(db.as_ref(), &records, args.batch)?;
        let batches = started.elapsed().as_secs_f64();
        if db.get(&probe)?.is_none() {
            return Err(format!("{engine}: a batch-loaded key is missing"));
        }
        let files = base.join(format!("{engine}-files"));
        std::fs::create_dir_all(&files).map_err(|e| e.to_string())?;
        let db = open(engine, args, &base.join(format!("{engine}-ingest")))?;
        let started = Instant::now();
        let writing = load_files(db.as_ref(), &records, args.file_records, &files)?;
        let ingest = started.elapsed().as_secs_f64();
        if db.get(&probe)?.is_none() {
            return Err(format!("{engine}: an ingested key is missing"));
        }
        rows.push(IngestResult {
            engine: engine.to_string(),
            batches_per_sec: args.num as f64 / batches,
            ingest_per_sec: args.num as f64 / ingest,
            file_write_secs: writing,
            ingest_call_secs: ingest - writing,
        });
    }
    Ok(rows)
}

/// `strata-bench ingest [flags]`.
pub fn main(argv: &[std::ffi::OsString]) -> BenchResult<()> {
    let args = IngestArgs::try_parse_from(std::iter::once("ingest".into()).chain(argv.iter().cloned()))
        .map_err(|e| e.to_string())?;
    println!(
        "sorted load of {} records of {} B: write batches of {} then a flush, against files of {} records \
         ingested one by one (moved); write buffer {} B, bloom 10 bits, no compression",
        args.num, args.value_size, args.batch, args.file_records, args.write_buffer_size
    );
    println!(
        "{:<10} {:>16} {:>16} {:>10} {:>16} {:>16}",
        "engine", "batches rec/s", "ingest rec/s", "ratio", "file writing s", "ingest calls s"
    );
    for r in run(&args)? {
        println!(
            "{:<10} {:>16.0} {:>16.0} {:>10.2} {:>16.2} {:>16.2}",
            r.engine,
            r.batches_per_sec,
            r.ingest_per_sec,
            r.ingest_per_sec / r.batches_per_sec,
            r.file_write_secs,
            r.ingest_call_secs
        );
    }
    Ok(())
}
