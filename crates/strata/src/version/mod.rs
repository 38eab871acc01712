//! Versions: file metadata with reference-counted lifetime, immutable `Version`s
//! (levels of sorted runs), `VersionEdit`s, the append-only MANIFEST with
//! `CURRENT`, and recovery of the version state. `docs/FORMAT.md` documents the MANIFEST.

mod buffer;
mod builder;
mod edit;
mod fences;
mod file_meta;
mod manifest;
mod policy_meta;
#[allow(clippy::module_inception)]
mod version;
mod version_set;

pub use buffer::{Buffer, BufferEntry, BufferTable};
pub(crate) use builder::Builder;
pub use edit::{BufferOp, KeyspaceOp, VersionEdit};
pub use file_meta::{FileMeta, NewFile, ObsoleteFiles};
pub(crate) use manifest::ManifestWriter;
pub use manifest::{read_current, read_manifest, set_current};
pub use policy_meta::KeyspaceEntry;
pub(crate) use policy_meta::PolicyMeta;
pub use version::{Level, Run, Version};
pub use version_set::VersionSet;
