//! `strata-bench txn`: YCSB workload A run as transactions. Half the
//! operations read a record (a plain get), half update it as a
//! read-modify-write transaction (`get_for_update`, put, commit), retried
//! while it conflicts. Keys are YCSB's scrambled zipfian. Strata's
//! optimistic and pessimistic transactions, and with the `rocksdb` feature
//! RocksDB's, with the same memory and table options.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::engine::BenchResult;
use crate::gen::{format_key, KeyChooser, ScrambledZipfian, ValueGen, ZIPFIAN_CONSTANT};

/// Flags of `strata-bench txn`.
#[derive(Parser, Debug, Clone)]
#[command(name = "strata-bench txn", about = "YCSB A as read-modify-write transactions")]
pub struct TxnArgs {
    /// Engines and kinds, comma-separated: strata-optimistic, strata-pessimistic,
    /// rocksdb-optimistic, rocksdb-pessimistic (the last two need the `rocksdb` feature).
    #[arg(long, default_value = "strata-optimistic,strata-pessimistic")]
    pub engines: String,
    /// Records loaded before the run.
    #[arg(long, default_value_t = 100_000)]
    pub num: u64,
    /// Operations of the run, over all threads.
    #[arg(long, default_value_t = 200_000)]
    pub ops: u64,
    /// Client threads.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Value bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Block cache bytes (each engine the same).
    #[arg(long, default_value_t = 64 << 20)]
    pub cache_size: usize,
    /// Memtable bytes (each engine the same).
    #[arg(long, default_value_t = 16 << 20)]
    pub write_buffer_size: usize,
    /// Directory the databases are created in (default: a fresh temporary one).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// One store under test.
trait TxnStore: Send + Sync {
    fn put(&self, key: &[u8], value: &[u8]) -> BenchResult<()>;
    fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>>;
    /// One read-modify-write transaction on `key`; `Ok(false)`: it conflicted
    /// (nothing written; the caller retries).
    fn rmw(&self, key: &[u8], value: &[u8]) -> BenchResult<bool>;
}

fn strata_options(args: &TxnArgs) -> strata::Options {
    strata::Options::default()
        .with_block_cache_capacity(args.cache_size)
        .with_write_buffer_size(args.write_buffer_size)
        .with_compression(strata::CompressionType::None)
        .with_bloom_bits_per_key(10.0)
}

/// The outcome of a Strata transaction's commit or lock: retry on the
/// retryable errors.
fn strata_outcome(r: strata::Result<()>) -> BenchResult<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.is_retryable() => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

struct StrataOptimistic(strata::OptimisticTransactionDb);

impl TxnStore for StrataOptimistic {
    fn put(&self, key: &[u8], value: &[u8]) -> BenchResult<()> {
        self.0.put(key, value).map_err(|e| e.to_string())
    }
    fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>> {
        self.0.get(key).map_err(|e| e.to_string())
    }
    fn rmw(&self, key: &[u8], value: &[u8]) -> BenchResult<bool> {
        let mut t = self.0.begin();
        t.get_for_update(key).map_err(|e| e.to_string())?;
        t.put(key, value).map_err(|e| e.to_string())?;
        strata_outcome(t.commit())
    }
}

struct StrataPessimistic(strata::TransactionDb);

impl TxnStore for StrataPessimistic {
    fn put(&self, key: &[u8], value: &[u8]) -> BenchResult<()> {
        self.0.put(key, value).map_err(|e| e.to_string())
    }
    fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>> {
        self.0.db().get(key).map_err(|e| e.to_string())
    }
    fn rmw(&self, key: &[u8], value: &[u8]) -> BenchResult<bool> {
        let mut t = self.0.begin();
        let locked = t.get_for_update(key).map(drop).and_then(|()| t.put(key, value));
        if !strata_outcome(locked)? {
            return Ok(false);
        }
        strata_outcome(t.commit())
    }
}

#[cfg(feature = "rocksdb")]
mod rocks {
    use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, ErrorKind, MultiThreaded, Options};

    use super::{TxnArgs, TxnStore};
    use crate::engine::BenchResult;

    pub fn options(args: &TxnArgs) -> BenchResult<Options> {
        let mut table = BlockBasedOptions::default();
        let cache = Cache::new_lru_cache(args.cache_size).map_err(|e| e.to_string())?;
        table.set_block_cache(&cache);
        table.set_bloom_filter(10.0, false);
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.set_block_based_table_factory(&table);
        opts.set_write_buffer_size(args.write_buffer_size);
        opts.set_compression_type(DBCompressionType::None);
        opts.set_max_background_jobs(2);
        Ok(opts)
    }

    fn outcome(r: Result<(), rocksdb::Error>) -> BenchResult<bool> {
        match r {
            Ok(()) => Ok(true),
            Err(e) if matches!(e.kind(), ErrorKind::Busy | ErrorKind::TryAgain | ErrorKind::TimedOut) => {
                Ok(false)
            }
            Err(e) => Err(e.to_string()),
        }
    }

    pub struct Optimistic(pub rocksdb::OptimisticTransactionDB<MultiThreaded>);

    impl TxnStore for Optimistic {
        fn put(&self, key: &[u8], value: &[u8]) -> BenchResult<()> {
            self.0.put(key, value).map_err(|e| e.to_string())
        }
        fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>> {
            self.0.get(key).map_err(|e| e.to_string())
        }
        fn rmw(&self, key: &[u8], value: &[u8]) -> BenchResult<bool> {
            // A snapshot at begin, as Strata's optimistic default.
            let mut to = rocksdb::OptimisticTransactionOptions::default();
            to.set_snapshot(true);
            let t = self.0.transaction_opt(&rocksdb::WriteOptions::default(), &to);
            let ro = rocksdb::ReadOptions::default();
            t.get_for_update_opt(key, true, &ro).map_err(|e| e.to_string())?;
            t.put(key, value).map_err(|e| e.to_string())?;
            outcome(t.commit())
        }
    }

    pub struct Pessimistic(pub rocksdb::TransactionDB<MultiThreaded>);

    impl TxnStore for Pessimistic {
        fn put(&self, key: &[u8], value: &[u8]) -> BenchResult<()> {
            self.0.put(key, value).map_err(|e| e.to_string())
        }
        fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>> {
            self.0.get(key).map_err(|e| e.to_string())
        }
        fn rmw(&self, key: &[u8], value: &[u8]) -> BenchResult<bool> {
            let t = self.0.transaction();
            let locked = t.get_for_update(key, true).map(drop).and_then(|()| t.put(key, value));
            if !outcome(locked)? {
                return Ok(false);
            }
            outcome(t.commit())
        }
    }
}

fn open(name: &str, args: &TxnArgs, path: &std::path::Path) -> BenchResult<Box<dyn TxnStore>> {
    let opts = strata_options(args);
    let err = |e: strata::Error| e.to_string();
    Ok(match name {
        "strata-optimistic" => {
            Box::new(StrataOptimistic(strata::OptimisticTransactionDb::open(path, opts).map_err(err)?))
        }
        "strata-pessimistic" => {
            Box::new(StrataPessimistic(strata::TransactionDb::open(path, opts).map_err(err)?))
        }
        #[cfg(feature = "rocksdb")]
        "rocksdb-optimistic" => Box::new(rocks::Optimistic(
            rocksdb::OptimisticTransactionDB::open(&rocks::options(args)?, path)
                .map_err(|e| e.to_string())?,
        )),
        #[cfg(feature = "rocksdb")]
        "rocksdb-pessimistic" => Box::new(rocks::Pessimistic(
            rocksdb::TransactionDB::open(
                &rocks::options(args)?,
                &rocksdb::TransactionDBOptions::default(),
                path,
            )
            .map_err(|e| e.to_string())?,
        )),
        other => {
            return Err(format!(
                "unknown or not built-in engine {other:?} (rocksdb-* need --features rocksdb)"
            ))
        }
    })
}

/// What one engine's run measured.
#[derive(Debug, Clone)]
pub struct TxnResult {
    /// Engine and kind (`strata-optimistic`, ...).
    pub engine: String,
    /// Operations (gets and committed transactions) per second.
    pub ops_per_sec: f64,
    /// Transactions committed.
    pub commits: u64,
    /// Transactions retried after a conflict, timeout or deadlock.
    pub retries: u64,
    /// 99th percentile of a get, in microseconds.
    pub read_p99_us: f64,
    /// 99th percentile of a transaction, retries included, in microseconds.
    pub rmw_p99_us: f64,
}

/// Loads `num` records, then runs the workload; one row per engine.
pub fn run(args: &TxnArgs) -> BenchResult<Vec<TxnResult>> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let base = args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let mut rows = Vec::new();
    for name in args.engines.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let path = base.join(name);
        let store = open(name, args, &path)?;
        let mut values = ValueGen::new(1, 1.0);
        for i in 0..args.num {
            store.put(&format_key(i, 16), values.next(args.value_size))?;
        }
        rows.push(run_one(name, store.as_ref(), args)?);
    }
    Ok(rows)
}

fn run_one(name: &str, store: &dyn TxnStore, args: &TxnArgs) -> BenchResult<TxnResult> {
    let (commits, retries) = (AtomicU64::new(0), AtomicU64::new(0));
    let threads = args.threads.max(1);
    let per_thread = args.ops / threads as u64;
    let start = Instant::now();
    let hists = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (commits, retries) = (&commits, &retries);
                s.spawn(move || -> BenchResult<(Histogram<u64>, Histogram<u64>)> {
                    let mut rng = SmallRng::seed_from_u64(t as u64 + 1);
                    let mut keys = ScrambledZipfian::new(args.num, ZIPFIAN_CONSTANT);
                    let mut values = ValueGen::new(t as u64 + 100, 1.0);
                    let mut reads = crate::bench::measure::new_hist()?;
                    let mut rmws = crate::bench::measure::new_hist()?;
                    for _ in 0..per_thread {
                        let key = format_key(keys.next_index(&mut rng), 16);
                        let op = Instant::now();
                        if rng.gen_bool(0.5) {
                            store.get(&key)?;
                            reads.saturating_record(op.elapsed().as_nanos() as u64);
                        } else {
                            let value = values.next(args.value_size).to_vec();
                            while !store.rmw(&key, &value)? {
                                retries.fetch_add(1, Ordering::Relaxed);
                            }
                            commits.fetch_add(1, Ordering::Relaxed);
                            rmws.saturating_record(op.elapsed().as_nanos() as u64);
                        }
                    }
                    Ok((reads, rmws))
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("a worker panicked".into())))
            .collect::<BenchResult<Vec<_>>>()
    })?;
    let elapsed = start.elapsed().max(Duration::from_micros(1));
    let mut reads = crate::bench::measure::new_hist()?;
    let mut rmws = crate::bench::measure::new_hist()?;
    for (r, w) in hists {
        reads.add(r).map_err(|e| e.to_string())?;
        rmws.add(w).map_err(|e| e.to_string())?;
    }
    let p99 = |h: &Histogram<u64>| crate::bench::measure::quantile_us(h, 0.99);
    Ok(TxnResult {
        engine: name.to_string(),
        ops_per_sec: (per_thread * threads as u64) as f64 / elapsed.as_secs_f64(),
        commits: commits.into_inner(),
        retries: retries.into_inner(),
        read_p99_us: p99(&reads),
        rmw_p99_us: p99(&rmws),
    })
}

/// `strata-bench txn [flags]`.
pub fn main(argv: &[std::ffi::OsString]) -> BenchResult<()> {
    let args = TxnArgs::try_parse_from(std::iter::once("txn".into()).chain(argv.iter().cloned()))
        .map_err(|e| e.to_string())?;
    println!(
        "YCSB A as transactions: {} records of {} B, {} ops on {} threads (50% get, 50% get_for_update+put+commit), \
         scrambled zipfian; block cache {} B, write buffer {} B, bloom 10 bits, no compression",
        args.num, args.value_size, args.ops, args.threads, args.cache_size, args.write_buffer_size
    );
    println!(
        "{:<22} {:>12} {:>10} {:>9} {:>14} {:>14}",
        "engine", "ops/s", "commits", "retries", "get p99 us", "rmw p99 us"
    );
    for r in run(&args)? {
        println!(
            "{:<22} {:>12.0} {:>10} {:>9} {:>14.1} {:>14.1}",
            r.engine, r.ops_per_sec, r.commits, r.retries, r.read_p99_us, r.rmw_p99_us
        );
    }
    Ok(())
}
