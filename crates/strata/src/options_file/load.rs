//! [`Options::load_latest`]: a parsed OPTIONS file applied to `Options`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::compaction::style::CompactionStyle;
use crate::error::{Error, Result};
use crate::keyspace_options::PersistedStyle;
use crate::options::kinds::{BloomAllocation, CompactionPipeline, CompressionType};
use crate::options::{KeyspaceOptions, Options};
use crate::prefix::FixedPrefix;
use crate::version::VersionSet;
use crate::vfs::RealVfs;

use super::text::{parse_recovery_mode, Entry, Section};
use super::{file_name, list, read};

fn value<T: std::str::FromStr>(file: &str, e: &Entry) -> Result<T> {
    e.value.parse().map_err(|_| {
        Error::corruption(format!("{file} line {}: {}={:?} is not a valid value", e.line, e.key, e.value))
    })
}

/// Sets the database-wide options of `o` from `[DBOptions]`.
fn apply_db(file: &str, s: &Section, o: &mut Options) -> Result<()> {
    let mut pipeline = None;
    let mut threads = 1usize;
    o.db_paths.clear();
    for e in &s.entries {
        match e.key.as_str() {
            "block_cache_capacity" => o.block_cache_capacity = value(file, e)?,
            "row_cache_capacity" => o.row_cache_capacity = value(file, e)?,
            "max_open_files" => o.max_open_files = value(file, e)?,
            "delayed_write_rate" => o.delayed_write_rate = value(file, e)?,
            "use_direct_reads" => o.use_direct_reads = value(file, e)?,
            "mmap_reads" => o.mmap_reads = value(file, e)?,
            "max_mapped_files" => o.max_mapped_files = value(file, e)?,
            "compaction_readahead_size" => o.compaction_readahead_size = value(file, e)?,
            "compaction_pipeline" => pipeline = Some(e),
            "compaction_pipeline_threads" => threads = value(file, e)?,
            "max_background_compactions" => o.max_background_compactions = value(file, e)?,
            "max_background_jobs" => o.max_background_jobs = value(file, e)?,
            "compaction_subtask_bytes" => o.compaction_subtask_bytes = value(file, e)?,
            "compaction_warmup" => o.compaction_warmup = value(file, e)?,
            "paranoid_checks" => o.paranoid_checks = value(file, e)?,
            "paranoid_file_checks" => o.paranoid_file_checks = value(file, e)?,
            "avoid_flush_during_shutdown" => o.avoid_flush_during_shutdown = value(file, e)?,
            "wal_recovery_mode" => {
                o.wal_recovery_mode = parse_recovery_mode(&e.value).ok_or_else(|| bad_value(file, e))?
            }
            "max_manifest_file_size" => o.max_manifest_file_size = value(file, e)?,
            "max_total_wal_size" => o.max_total_wal_size = value(file, e)?,
            "max_write_buffer_size_to_maintain" => o.max_write_buffer_size_to_maintain = value(file, e)?,
            "info_log" => o.info_log = value(file, e)?,
            "max_log_file_size" => o.max_log_file_size = value(file, e)?,
            "keep_log_file_num" => o.keep_log_file_num = value(file, e)?,
            "db_path" => o.db_paths.push(PathBuf::from(&e.value)),
            _ => {}
        }
    }
    if let Some(e) = pipeline {
        o.compaction_pipeline =
            CompactionPipeline::parse(&e.value, threads).map_err(|_| bad_value(file, e))?;
    }
    Ok(())
}

fn bad_value(file: &str, e: &Entry) -> Error {
    Error::corruption(format!("{file} line {}: {}={:?} is not a valid value", e.line, e.key, e.value))
}

/// Sets the per-tree options of `o` from a `[Keyspace]` section; trait
/// objects come from `given` (what the caller supplied for that keyspace).
fn apply_tree(file: &str, ks: &str, s: &Section, given: &Options, o: &mut Options) -> Result<()> {
    let (mut style, mut custom, mut c, mut segments) = (None, None, None, None);
    let (mut merge, mut filter, mut prefix) = (None, None, None);
    for e in &s.entries {
        match e.key.as_str() {
            "compaction_style" => style = Some(e),
            "custom_policy" => custom = Some(e.value.clone()),
            "garnering_c" => c = Some(value::<f64>(file, e)?),
            "lwc_max_segments" => segments = Some(value::<usize>(file, e)?),
            "write_buffer_size" => o.write_buffer_size = value(file, e)?,
            "max_write_buffer_number" => o.max_write_buffer_number = value(file, e)?,
            "level0_file_num_compaction_trigger" => o.level0_file_num_compaction_trigger = value(file, e)?,
            "level0_slowdown_writes_trigger" => o.level0_slowdown_writes_trigger = value(file, e)?,
            "level0_stop_writes_trigger" => o.level0_stop_writes_trigger = value(file, e)?,
            "max_bytes_for_level_base" => o.max_bytes_for_level_base = value(file, e)?,
            "max_bytes_for_level_multiplier" => o.max_bytes_for_level_multiplier = value(file, e)?,
            "num_levels" => o.num_levels = value(file, e)?,
            "target_file_size_base" => o.target_file_size_base = value(file, e)?,
            "block_size" => o.block_size = value(file, e)?,
            "block_restart_interval" => o.block_restart_interval = value(file, e)?,
            "bloom_bits_per_key" => o.bloom_bits_per_key = value(file, e)?,
            "bloom_allocation" => {
                o.bloom_allocation = BloomAllocation::parse(&e.value).map_err(|_| bad_value(file, e))?
            }
            "whole_key_filtering" => o.whole_key_filtering = value(file, e)?,
            "compression" => {
                o.compression = CompressionType::parse(&e.value).map_err(|_| bad_value(file, e))?
            }
            "disable_auto_compactions" => o.disable_auto_compactions = value(file, e)?,
            "buffer_trim_interval_nanos" => {
                o.buffer_trim_interval = Duration::from_nanos(value(file, e)?);
            }
            "buffer_trim_threshold" => o.buffer_trim_threshold = value(file, e)?,
            "buffer_read_misses" => o.buffer_read_misses = value(file, e)?,
            "seek_compaction" => o.seek_compaction = value(file, e)?,
            "max_mem_compaction_level" => o.max_mem_compaction_level = value(file, e)?,
            "buffer_last_level" => o.buffer_last_level = value(file, e)?,
            "buffer_min_part_size" => o.buffer_min_part_size = Some(value(file, e)?),
            "idle_compaction_nanos" => o.idle_compaction = Some(Duration::from_nanos(value(file, e)?)),
            "merge_operator" => merge = Some(e.value.clone()),
            "compaction_filter" => filter = Some(e.value.clone()),
            "prefix_extractor" => prefix = Some(e.value.clone()),
            _ => {}
        }
    }
    let style_entry =
        style.ok_or_else(|| Error::corruption(format!("{file}: keyspace {ks:?} has no compaction_style")))?;
    o.compaction_style = match (style_entry.value.as_str(), custom) {
        ("custom", Some(name)) => match &given.compaction_style {
            CompactionStyle::Custom(p) if p.name() == name => given.compaction_style.clone(),
            _ => {
                return Err(Error::invalid(format!(
                    "{file}: keyspace {ks:?} uses the custom compaction policy {name:?}, which cannot be \
                     loaded: supply it as CompactionStyle::Custom in the options given to load_latest_with"
                )))
            }
        },
        ("garnering", _) => {
            CompactionStyle::Garnering { c: c.unwrap_or(CompactionStyle::DEFAULT_GARNERING_C) }
        }
        ("lwc", _) => CompactionStyle::Lwc {
            max_segments: segments.unwrap_or(CompactionStyle::DEFAULT_LWC_MAX_SEGMENTS),
        },
        (name, _) => CompactionStyle::from_name(name).map_err(|_| bad_value(file, style_entry))?,
    };
    o.merge_operator = match merge {
        None => given.merge_operator.clone(),
        Some(name) => match &given.merge_operator {
            Some(m) if m.name() == name => Some(m.clone()),
            Some(m) => {
                return Err(Error::invalid(format!(
                    "{file}: keyspace {ks:?} uses merge operator {name:?}, but the one supplied is {:?}",
                    m.name()
                )))
            }
            // The engine's named operators rebuild from their name.
            None => match crate::merge_operators::builtin_merge_operator(&name) {
                Some(op) => Some(op),
                None => {
                    return Err(Error::invalid(format!(
                        "{file}: keyspace {ks:?} uses merge operator {name:?}, which cannot be loaded: supply it \
                         in the options given to load_latest_with"
                    )))
                }
            },
        },
    };
    o.compaction_filter = match (filter, &given.compaction_filter) {
        (Some(name), Some(f)) if f.name() != name => {
            return Err(Error::invalid(format!(
                "{file}: keyspace {ks:?} uses compaction filter {name:?}, but the one supplied is {:?}",
                f.name()
            )))
        }
        (Some(name), None) => {
            // Not a correctness matter (a compaction without it keeps entries it would drop).
            log::warn!(
                target: "strata::options",
                "{file}: keyspace {ks:?} used compaction filter {name:?}, not supplied: loaded without one"
            );
            None
        }
        (_, f) => f.clone(),
    };
    o.prefix_extractor = match (prefix, &given.prefix_extractor) {
        (Some(name), Some(p)) if p.name() == name => Some(p.clone()),
        (Some(name), _) => match name.strip_prefix("strata.FixedPrefix.").and_then(|n| n.parse().ok()) {
            Some(len) => Some(Arc::new(FixedPrefix::new(len))),
            // Tables record their extractor, so leaving it out only costs filter skips.
            None => {
                log::warn!(
                    target: "strata::options",
                    "{file}: keyspace {ks:?} used prefix extractor {name:?}, not supplied: loaded without one"
                );
                given.prefix_extractor.clone()
            }
        },
        (None, p) => p.clone(),
    };
    Ok(())
}

/// `tree` with the per-tree settings the MANIFEST records for it (`bytes`),
/// keeping its trait objects and data paths; a recorded custom policy keeps
/// whatever `tree` has (the file's, already checked against the caller's).
fn with_recorded(tree: &Options, bytes: &[u8], file: &str, name: &str) -> Result<Options> {
    let (stored, style) = KeyspaceOptions::decode(bytes)
        .map_err(|e| Error::corruption(format!("the MANIFEST's options of keyspace {name:?}: {e}")))?;
    if matches!(style, PersistedStyle::Custom(_)) {
        return Ok(tree.clone());
    }
    let mut t = stored.apply(tree);
    (t.merge_operator, t.compaction_filter, t.prefix_extractor) =
        (tree.merge_operator.clone(), tree.compaction_filter.clone(), tree.prefix_extractor.clone());
    t.db_paths = tree.db_paths.clone();
    if t.compaction_style.name() != tree.compaction_style.name() {
        log::warn!(
            target: "strata::options",
            "{file}: keyspace {name:?} is recorded with policy {} in the MANIFEST, not {}: using the MANIFEST's",
            t.compaction_style.name(),
            tree.compaction_style.name()
        );
    }
    Ok(t)
}

/// [`Options::load_latest_with`]'s work: the newest file, else (damaged)
/// the one before it, which every write keeps.
fn load(dir: &Path, given: &Options) -> Result<Options> {
    let vfs = given.vfs.as_ref();
    let files = list(vfs, dir)?;
    let Some(&newest) = files.last() else {
        return Err(Error::NotADatabase(format!("{} holds no OPTIONS file", dir.display())));
    };
    let err = match load_file(&dir.join(file_name(newest)), dir, given) {
        Err(e) if e.is_corruption() => e,
        r => return r,
    };
    let Some(&previous) = files.iter().rev().nth(1) else { return Err(err) };
    match load_file(&dir.join(file_name(previous)), dir, given) {
        Ok(o) => {
            log::warn!(
                target: "strata::options",
                "{err}: loaded the previous file, {}, instead",
                file_name(previous)
            );
            Ok(o)
        }
        Err(_) => Err(err),
    }
}

/// Loads the OPTIONS file at `path` of the database in `dir`.
fn load_file(path: &Path, dir: &Path, given: &Options) -> Result<Options> {
    let vfs = given.vfs.as_ref();
    let parsed = read(vfs, path)?;
    parsed.check()?;
    let file = parsed.name();
    let mut o = given.clone();
    std::sync::Arc::make_mut(&mut o.keyspaces).clear();
    if let Some(s) = parsed.section("DBOptions") {
        apply_db(&file, s, &mut o)?;
    }
    let mut saw_default = false;
    for s in parsed.sections.iter().filter(|s| s.kind == "Keyspace") {
        let name =
            s.arg.clone().ok_or_else(|| Error::corruption(format!("{file}: a [Keyspace] without a name")))?;
        if name == "default" {
            let given_default = given.clone();
            apply_tree(&file, &name, s, &given_default, &mut o)?;
            saw_default = true;
        } else {
            let given_ks =
                given.keyspaces.iter().find(|(n, _)| *n == name).map(|(_, k)| k.apply(given)).unwrap_or_else(
                    || {
                        let mut g = given.clone();
                        g.compaction_style = CompactionStyle::Leveled;
                        (g.merge_operator, g.compaction_filter, g.prefix_extractor) = (None, None, None);
                        g
                    },
                );
            let mut tree = Options::default();
            apply_tree(&file, &name, s, &given_ks, &mut tree)?;
            tree.explicit = 0;
            std::sync::Arc::make_mut(&mut o.keyspaces).push((name, KeyspaceOptions::from_options(&tree)));
        }
    }
    if !saw_default {
        return Err(Error::corruption(format!("{file}: no [Keyspace \"default\"] section")));
    }
    if vfs.exists(&crate::filename::current_path(dir)) {
        let root = VersionSet::load_read_only(given.vfs.clone(), dir, 64, |_, _| Ok(()))?;
        // The MANIFEST's record of each tree wins over the file: after a
        // crash between a policy change's edit and this file's rewrite, the
        // file still names the old policy, and loading it would change back.
        if let Some(bytes) = root.default_options() {
            o = with_recorded(&o, &bytes, &file, "default")?;
        }
        let registry: BTreeMap<String, Vec<u8>> =
            root.keyspaces().into_values().map(|e| (e.name, e.options)).collect();
        // A keyspace dropped after the file was written must not come back:
        // `Db::open` creates the keyspaces it is given that do not exist.
        std::sync::Arc::make_mut(&mut o.keyspaces).retain(|(name, _)| {
            let keep = registry.contains_key(name);
            if !keep {
                log::warn!(target: "strata::options", "{file}: keyspace {name:?} is no longer in the database: left out");
            }
            keep
        });
        for (name, ks) in std::sync::Arc::make_mut(&mut o.keyspaces).iter_mut() {
            let mut tree = with_recorded(&ks.apply(given), &registry[name.as_str()], &file, name)?;
            tree.explicit = 0;
            *ks = KeyspaceOptions::from_options(&tree);
        }
    }
    // What was loaded is what the database records, not a change the caller
    // asks for: a later open keeps the MANIFEST's value of every field the
    // caller does not set after loading.
    o.explicit = 0;
    // Keyspaces the caller named that the file does not list (to be created).
    for (name, ks) in given.keyspaces.iter() {
        if !o.keyspaces.iter().any(|(n, _)| n == name) {
            std::sync::Arc::make_mut(&mut o.keyspaces).push((name.clone(), ks.clone()));
        }
    }
    o.validate()?;
    Ok(o)
}

impl Options {
    /// The options the database in `dir` last opened read-write with, from
    /// its newest `OPTIONS-NNNNNN` file (RocksDB `LoadLatestOptions`), on
    /// the real file system: the database-wide options, the default
    /// keyspace's options, and each other keyspace's through
    /// [`Options::with_keyspace`]. Each tree's per-tree settings (policy,
    /// sizes, filters) are those the MANIFEST records where it records them,
    /// so a file left stale by a crash never undoes a policy change. Options
    /// that are not written down stay at
    /// their defaults: `create_if_missing`, `error_if_exists`, event
    /// listeners, the file system. A database whose file names a merge
    /// operator (other than one of [`crate::merge_operators`], rebuilt by
    /// name) or a custom policy fails with [`Error::InvalidArgument`]
    /// naming it: supply those through [`Options::load_latest_with`]. No
    /// OPTIONS file (a database last opened by an older Strata) is
    /// [`Error::NotADatabase`]. A damaged newest file (one that fails its
    /// checksum or cannot be read back) is passed over, with a warning, for
    /// the previous one, which every write keeps; if that is missing or
    /// damaged too, the error is [`Error::Corruption`] naming the newest.
    /// Options loaded are not "set by the caller": [`Db::open`](crate::Db::open)
    /// keeps the MANIFEST's value of every per-tree option not set after loading.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{CompactionStyle, Db, KeyspaceOptions, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let opts = Options::default().with_compaction_style(CompactionStyle::Tiered).with_write_buffer_size(1 << 20);
    /// let db = Db::open(dir.path(), opts)?;
    /// db.create_keyspace("index", KeyspaceOptions::default().with_compaction_style(CompactionStyle::Lwc { max_segments: 4 }))?;
    /// db.close()?;
    ///
    /// let loaded = Options::load_latest(dir.path())?;
    /// let db = Db::open(dir.path(), loaded)?;
    /// assert_eq!(db.property("strata.policy")?, "tiered");
    /// assert_eq!(db.keyspace("index")?.property("strata.policy")?, "lwc");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load_latest(dir: impl AsRef<Path>) -> Result<Options> {
        Self::load_latest_with(dir, &Options::default().with_vfs(Arc::new(RealVfs::new())))
    }

    /// [`Options::load_latest`] through `given`'s file system, keeping what
    /// the file cannot hold from `given`: its event listeners,
    /// `create_if_missing` and `error_if_exists`, and the trait objects the
    /// file names — a custom policy ([`CompactionStyle::Custom`]), merge
    /// operator, compaction filter or prefix extractor of the default
    /// keyspace set on `given` itself, of keyspace `K` on the
    /// [`KeyspaceOptions`] given with `given.with_keyspace(K, ..)`. Each must
    /// have the name the file records: a custom policy or merge operator
    /// that is missing or named otherwise is [`Error::InvalidArgument`]; a
    /// missing compaction filter or prefix extractor is left out with a
    /// warning (neither changes what reads return; `strata.FixedPrefix.N` is
    /// rebuilt). Every other option comes from the file.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{associative_merge_operator, Db, MemVfs, Options};
    ///
    /// let concat = associative_merge_operator("concat", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    /// let base = Options::default().with_vfs(Arc::new(MemVfs::new()));
    /// let db = Db::open("/db", base.clone().with_merge_operator(concat.clone()).with_block_size(8192))?;
    /// db.merge("k", "a")?;
    /// db.close()?;
    ///
    /// // The operator is named in the file but must be supplied.
    /// assert!(Options::load_latest_with("/db", &base).is_err());
    /// let loaded = Options::load_latest_with("/db", &base.with_merge_operator(concat))?;
    /// let db = Db::open("/db", loaded)?;
    /// db.merge("k", "b")?;
    /// assert_eq!(db.get("k")?, Some(b"ab".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn load_latest_with(dir: impl AsRef<Path>, given: &Options) -> Result<Options> {
        load(dir.as_ref(), given)
    }

    /// The options given for keyspace `name` with [`Options::with_keyspace`]
    /// (or loaded by [`Options::load_latest`]), if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{CompactionStyle, KeyspaceOptions, Options};
    ///
    /// let opts = Options::default().with_keyspace("log", KeyspaceOptions::default().with_compaction_style(CompactionStyle::Tiered));
    /// assert_eq!(opts.keyspace_options("log").map(|k| k.compaction_style().name()).as_deref(), Some("tiered"));
    /// assert!(opts.keyspace_options("other").is_none());
    /// ```
    pub fn keyspace_options(&self, name: &str) -> Option<&KeyspaceOptions> {
        self.keyspaces.iter().find(|(n, _)| n == name).map(|(_, k)| k)
    }

    /// The names of the keyspaces given with [`Options::with_keyspace`] (or
    /// loaded by [`Options::load_latest`]), in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{KeyspaceOptions, Options};
    ///
    /// let opts = Options::default().with_keyspace("a", KeyspaceOptions::default()).with_keyspace("b", KeyspaceOptions::default());
    /// assert_eq!(opts.keyspace_names(), ["a", "b"]);
    /// ```
    pub fn keyspace_names(&self) -> Vec<String> {
        self.keyspaces.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The compaction policy (of the default keyspace).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{CompactionStyle, Options};
    ///
    /// assert_eq!(Options::default().compaction_style().name(), "leveled");
    /// ```
    pub fn compaction_style(&self) -> &CompactionStyle {
        &self.compaction_style
    }
}
