//! The compaction-buffer half of a policy (LSbM, dLSM), apart from the core
//! trait so that a policy without buffers implements none of it.

use super::{CompactionPolicy, LsmView, PickResult};

/// What the engine asks a policy that keeps compaction buffers; reached
/// through [`CompactionPolicy::buffers`].
pub trait BufferPolicy: Send + Sync + std::fmt::Debug {
    /// The compaction-buffer trim (LSbM Algorithm 2): given a view whose buffer
    /// entries carry `cached_fraction`, the buffer files to remove.
    fn trim(&self, view: &LsmView) -> Option<PickResult>;
    /// True if the engine should call [`Self::trim`] every
    /// `Options::buffer_trim_interval`.
    fn wants_trim(&self) -> bool;
    /// True if reads may use a buffer file only where the block that would
    /// answer is already cached (LSbM: the buffer serves hot data only);
    /// false lets them read buffer files from the device (dLSM).
    fn reads_cached_only(&self) -> bool;
    /// True if range reads may read a run's complete compaction buffer instead
    /// of the run where no removed buffer file overlaps the range (LSbM
    /// Algorithm 4); false sends them to the runs (dLSM, the paper's choice).
    fn serves_ranges(&self) -> bool;
}

/// The engine's questions about buffers, answered for any policy (with or
/// without [`BufferPolicy`]), so call sites need not unwrap it.
impl<'a> dyn CompactionPolicy + 'a {
    /// True if the policy keeps compaction buffers (LSbM, dLSM).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{CompactionStyle, Db, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default()
    ///     .with_compaction_style(CompactionStyle::Dlsm)
    ///     .with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// assert_eq!(db.property("strata.policy")?, "dlsm"); // keeps its buffers
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn keeps_compaction_buffers(&self) -> bool {
        self.buffers().is_some()
    }

    /// The trim's pick; `None` without buffers.
    pub fn trim(&self, view: &LsmView) -> Option<PickResult> {
        self.buffers()?.trim(view)
    }

    /// [`BufferPolicy::wants_trim`]; false without buffers.
    pub fn wants_trim(&self) -> bool {
        self.buffers().is_some_and(|b| b.wants_trim())
    }

    /// [`BufferPolicy::reads_cached_only`]; true without buffers (buffers a
    /// previous policy left are read only where cached until they are dropped).
    pub fn buffer_reads_cached_only(&self) -> bool {
        self.buffers().is_none_or(|b| b.reads_cached_only())
    }

    /// [`BufferPolicy::serves_ranges`]; false without buffers.
    pub fn buffer_serves_ranges(&self) -> bool {
        self.buffers().is_some_and(|b| b.serves_ranges())
    }
}
