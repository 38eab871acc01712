//! A `MemVfs` with hooks where a test needs the file system to misbehave or
//! pause: below the write buffer of every new file, and before a removal.

use std::path::Path;
use std::sync::Arc;

use strata::vfs::{
    BufferedFile, FileLock, RandomAccessFile, RandomOpenOptions, RawFile, SequentialFile, WritableFile,
};
use strata::{MemVfs, Vfs};

/// Wraps the OS layer of a new file at `path`.
pub type CreateHook = Box<dyn Fn(&Path, Box<dyn RawFile>) -> Box<dyn RawFile> + Send + Sync>;
/// Runs before `path` is removed (it may block).
pub type RemoveHook = Box<dyn Fn(&Path) + Send + Sync>;

pub struct HookVfs {
    pub mem: MemVfs,
    on_create: Option<CreateHook>,
    on_remove: Option<RemoveHook>,
}

impl HookVfs {
    /// `mem` with no hooks yet.
    pub fn new(mem: MemVfs) -> Self {
        HookVfs { mem, on_create: None, on_remove: None }
    }

    /// Every new file's OS layer goes through `hook(path, raw)`.
    pub fn on_create(mut self, hook: CreateHook) -> Self {
        self.on_create = Some(hook);
        self
    }

    /// `hook(path)` runs before every removal.
    pub fn on_remove(mut self, hook: RemoveHook) -> Self {
        self.on_remove = Some(hook);
        self
    }
}

impl std::fmt::Debug for HookVfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HookVfs({:?})", self.mem)
    }
}

impl Vfs for HookVfs {
    fn create_dir_all(&self, dir: &Path) -> strata::Result<()> {
        self.mem.create_dir_all(dir)
    }
    fn create(&self, path: &Path) -> strata::Result<Box<dyn WritableFile>> {
        if self.on_create.is_none() {
            return self.mem.create(path);
        }
        Ok(Box::new(BufferedFile::new(self.create_raw(path)?, path, 0)))
    }
    fn create_raw(&self, path: &Path) -> strata::Result<Box<dyn RawFile>> {
        let raw = self.mem.create_raw(path)?;
        Ok(match &self.on_create {
            Some(hook) => hook(path, raw),
            None => raw,
        })
    }
    fn open_sequential(&self, path: &Path) -> strata::Result<Box<dyn SequentialFile>> {
        self.mem.open_sequential(path)
    }
    fn open_random(&self, path: &Path, o: RandomOpenOptions) -> strata::Result<Arc<dyn RandomAccessFile>> {
        self.mem.open_random(path, o)
    }
    fn exists(&self, path: &Path) -> bool {
        self.mem.exists(path)
    }
    fn file_size(&self, path: &Path) -> strata::Result<u64> {
        self.mem.file_size(path)
    }
    fn remove_file(&self, path: &Path) -> strata::Result<()> {
        if let Some(hook) = &self.on_remove {
            hook(path);
        }
        self.mem.remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> strata::Result<()> {
        self.mem.rename(from, to)
    }
    fn list_dir(&self, dir: &Path) -> strata::Result<Vec<String>> {
        self.mem.list_dir(dir)
    }
    fn sync_dir(&self, dir: &Path) -> strata::Result<()> {
        self.mem.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> strata::Result<Box<dyn FileLock>> {
        self.mem.lock(path)
    }
}
