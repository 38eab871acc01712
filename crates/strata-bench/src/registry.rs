//! The engines the benchmark can open by name: Strata's and, each behind
//! its cargo feature, the peers'. Kept apart from `engine.rs` (the trait
//! every engine implements) so the trait does not depend on the peers.

use std::sync::Arc;

use crate::engine::{BenchResult, Engine, EngineConfig, StrataEngine};

/// Opens the engine named `kind` (`strata`, and with features `rocksdb`,
/// `leveldb`, `fjall`).
pub fn open_engine(kind: &str, cfg: &EngineConfig) -> BenchResult<Arc<dyn Engine>> {
    match kind {
        "strata" => Ok(Arc::new(StrataEngine::open(cfg)?)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Arc::new(crate::peers::rocksdb::RocksDbEngine::open(cfg)?)),
        #[cfg(feature = "leveldb")]
        "leveldb" => Ok(Arc::new(crate::peers::leveldb::LevelDbEngine::open(cfg)?)),
        #[cfg(feature = "fjall")]
        "fjall" => Ok(Arc::new(crate::peers::fjall::FjallEngine::open(cfg)?)),
        other => Err(format!(
            "engine {other:?} is not built in (enable its cargo feature; see docs/BENCHMARKS.md)"
        )),
    }
}
