//! A simulated shingled (SMR) or conventional drive under Strata's file
//! system, for the LWC paper's experiments (`--drive_model`): the
//! [`model::Drive`] that counts what the drive does and the [`SmrVfs`] that
//! shows it the engine's I/O. Simulated, and used only when asked for.

pub mod model;
mod vfs;

pub use model::{DriveConfig, DriveStats, Placement, Shingled};
pub use vfs::SmrVfs;

/// `smr (band 40 MiB, persistent cache 200 MiB, page cache 100 MiB, fs
/// placement)` / `hdd (page cache 100 MiB, fs placement)`.
pub fn describe(cfg: &DriveConfig) -> String {
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let rest = format!("page cache {:.0} MiB, {} placement", mib(cfg.page_cache), cfg.placement.name());
    match cfg.shingled {
        Some(s) => format!(
            "smr (band {:.0} MiB, persistent cache {:.0} MiB, {rest})",
            mib(s.band_size),
            mib(s.cache_size)
        ),
        None => format!("hdd ({rest})"),
    }
}
