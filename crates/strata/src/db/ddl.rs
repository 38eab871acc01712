//! Creating many keyspaces at once (RocksDB `CreateColumnFamilies`): one
//! OPTIONS file write for the batch instead of one per keyspace, whose
//! size grows with the number of keyspaces.

use super::keyspace::{persist_options_after_ddl, Keyspace};
use super::Db;
use crate::error::Result;
use crate::keyspace_options::KeyspaceOptions;

impl Db {
    /// Creates keyspaces `specs` (name and options each) in order, as
    /// [`Db::create_keyspace`] does, but writes the OPTIONS file once, after
    /// the last (RocksDB `CreateColumnFamilies`). On an error the keyspaces
    /// created before it stay, and the OPTIONS file lists them.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let made = db.create_keyspaces((0..3).map(|i| (format!("ks{i}"), KeyspaceOptions::default())))?;
    /// made[2].put("k", "v")?;
    /// assert_eq!(db.list_keyspaces(), ["default", "ks0", "ks1", "ks2"]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn create_keyspaces<N: AsRef<str>>(
        &self,
        specs: impl IntoIterator<Item = (N, KeyspaceOptions)>,
    ) -> Result<Vec<Keyspace>> {
        let mut made = Vec::new();
        let mut result = Ok(());
        for (name, opts) in specs {
            match self.create_tree(name.as_ref(), opts) {
                Ok(ks) => made.push(ks),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if !made.is_empty() {
            persist_options_after_ddl(&self.inner.shared, "creating keyspaces");
        }
        result.map(|()| made)
    }
}
