//! openraft's own storage test suite (`openraft::testing::Suite`, every
//! case) on a fresh Strata database per case.

use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;
use strata_raft::{LogStore, NodeId, StateMachine, TypeConfig};

struct Builder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, tempfile::TempDir> for Builder {
    async fn build(&self) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<NodeId>> {
        let dir = tempfile::tempdir().expect("temporary directory");
        let (log, sm) = strata_raft::open(dir.path().join("node")).expect("open");
        Ok((dir, log, sm))
    }
}

#[test]
fn openraft_storage_suite() {
    if let Err(e) = Suite::test_all(Builder) {
        panic!("openraft's storage suite failed: {e}");
    }
}
