//! Monkey (Dayan, Athanassoulis, Idreos, SIGMOD 2017): bloom filter bits per
//! sorted run that minimise the expected number of false-positive table probes
//! of a lookup for a missing key, for a fixed total filter memory.
//!
//! A missing-key lookup probes one file per sorted run, so its expected wasted
//! probes are `Σ p_i` (`p_i` the false-positive rate of run `i`). A bloom
//! filter with `b` bits per key has `p = e^(-b (ln 2)^2)`, so a run of `N_i`
//! entries costs `N_i (-ln p_i) / (ln 2)^2` bits. Minimising `Σ p_i` under
//! `Σ N_i (-ln p_i) / (ln 2)^2 = M` (Lagrange) gives `p_i = λ N_i`: a run's
//! rate is proportional to its size. Runs whose `p_i` would reach 1 get no
//! filter and the budget is re-solved over the others. The optimum itself does
//! not depend on the ratio between levels; the *full tree* a table's bits are
//! sized for does ([`project_full`]), and takes each level's ratio from the
//! policy, so Garnering's growing ratios (`T / c^(L−i)`) size its levels as
//! its capacities say, as Autumn allocates them.

use std::collections::HashSet;
use std::f64::consts::LN_2;

use super::policy::{CompactionPolicy, CompactionTask, FileRef, LsmView, PickResult, RunTarget};
use crate::options::kinds::BloomAllocation;
use crate::options::Options;
// Defined with the writers that take it; public here, where Monkey's API does.
pub use crate::sink::WriteTarget;

/// Most bits per key a run is given (the `bloom_bits_per_key` limit). Only a
/// run tiny beside the tree reaches it; the budget it would have had is unused.
pub const MAX_BITS_PER_KEY: f64 = 64.0;

/// Bits per key for runs of `entries[i]` entries under Monkey, for a budget of
/// `bits_per_key` on average over all entries. Runs with no entries, and runs
/// too large to be worth a filter at this budget, get 0.
pub fn allocate(entries: &[u64], bits_per_key: f64) -> Vec<f64> {
    let mut bits = vec![0.0; entries.len()];
    let total: f64 = entries.iter().map(|&n| n as f64).sum();
    if !(bits_per_key > 0.0 && bits_per_key.is_finite()) || total == 0.0 {
        return bits;
    }
    let ln2sq = LN_2 * LN_2;
    // The budget in "nats": Σ N_i (-ln p_i) over the runs with a filter.
    let budget = bits_per_key * total * ln2sq;
    // Largest first: with p_i ∝ N_i, the largest run is the first to reach p = 1.
    let mut active: Vec<usize> = (0..entries.len()).filter(|&i| entries[i] > 0).collect();
    active.sort_by_key(|&i| std::cmp::Reverse(entries[i]));
    let mut start = 0;
    while let Some(&largest) = active.get(start) {
        let rest = active.get(start..).unwrap_or_default();
        let n: f64 = rest.iter().map(|&i| entries[i] as f64).sum();
        let n_ln_n: f64 = rest.iter().map(|&i| entries[i] as f64 * (entries[i] as f64).ln()).sum();
        // Σ N_i (-ln(λ N_i)) = budget  =>  ln λ = -(budget + Σ N_i ln N_i) / Σ N_i.
        let ln_lambda = -(budget + n_ln_n) / n;
        if (entries[largest] as f64).ln() + ln_lambda >= 0.0 {
            start += 1;
            continue;
        }
        for &i in rest {
            let ln_p = (entries[i] as f64).ln() + ln_lambda;
            if let Some(b) = bits.get_mut(i) {
                *b = (-ln_p / ln2sq).min(MAX_BITS_PER_KEY);
            }
        }
        break;
    }
    bits
}

/// Entries of every sorted run of `view` once the write is installed: the
/// inputs gone, the target run holding the new entries. Returns the counts and
/// the index of the target run among them. Buffers are left out: their files
/// are copies of data a run already holds.
pub fn run_entries_after(view: &LsmView, target: &WriteTarget<'_>) -> (Vec<u64>, usize) {
    let gone: HashSet<&FileRef> = target.inputs.iter().collect();
    let mut runs = Vec::new();
    let mut at = None;
    for (l, level) in view.levels.iter().enumerate() {
        for run in &level.runs {
            let mut n: u64 = (run.files.iter())
                .filter(|f| !gone.contains(&FileRef { level: l, run: run.id, file: f.id }))
                .map(|f| f.num_entries)
                .sum();
            if l == target.level && target.run == RunTarget::Existing(run.id) {
                n = n.saturating_add(target.entries);
                at = Some(runs.len());
            }
            runs.push(n);
        }
    }
    let at = at.unwrap_or_else(|| {
        runs.push(target.entries);
        runs.len() - 1
    });
    // A write of nothing still gets a filter sized as if for one entry.
    if let Some(n) = runs.get_mut(at) {
        *n = (*n).max(1);
    }
    (runs, at)
}

/// Filter bits already spent by the files that stay in the tree once the write
/// is installed (the write's inputs are gone, its own tables not yet counted):
/// `Σ entries × bits` with each file's recorded bits, `default_bits` for a file
/// from a version that did not record them. Buffers are left out as above.
pub fn bits_in_force(view: &LsmView, target: &WriteTarget<'_>, default_bits: f64) -> f64 {
    let gone: HashSet<&FileRef> = target.inputs.iter().collect();
    let mut spent = 0.0;
    for (l, level) in view.levels.iter().enumerate() {
        for run in &level.runs {
            for f in &run.files {
                if !gone.contains(&FileRef { level: l, run: run.id, file: f.id }) {
                    spent += f.num_entries as f64 * f.bloom_bits_per_key.unwrap_or(default_bits);
                }
            }
        }
    }
    spent
}

/// The shape of a full tree, for [`project_full`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FullShape<'a> {
    /// Size ratio between a run and a run of the level above it.
    pub ratio: f64,
    /// Where a policy's levels differ (Garnering): `level_ratios[i]` is the
    /// ratio between level `i` and level `i - 1`; levels past its end use
    /// `ratio`.
    pub level_ratios: &'a [f64],
    /// Runs a full level holds: 1 under leveling, `r - 1` under tiering
    /// (the `r`-th run triggers the merge down).
    pub runs_per_level: usize,
}

/// The runs of the tree as Monkey's model sees it, the tree full: every level
/// down to the deepest with data holds `runs_per_level` runs, each `1/ratio`
/// (that level's ratio) the size of a run of the level below (or its actual
/// size if larger). So a
/// large run written while the levels above it happen to be empty (a tiered
/// cascade just merged them all down) is sized for the full tree it will live
/// in, not for the moment it was written. A level's single run (leveling) is
/// counted at its full size, so a table joining it gets that level's bits;
/// missing runs are appended after the real ones, whose indices stay valid.
pub fn project_full(runs: &[u64], levels: &[usize], shape: FullShape) -> Vec<u64> {
    let mut out = runs.to_vec();
    let k = shape.runs_per_level;
    let ratio = |level: usize| shape.level_ratios.get(level).copied().unwrap_or(shape.ratio);
    let deep = runs.iter().zip(levels).map(|(_, &l)| l).max().unwrap_or(0);
    if (1..=deep.max(1)).any(|l| !(ratio(l) > 1.0 && ratio(l).is_finite())) || k == 0 {
        return out;
    }
    let Some(deepest) = runs.iter().zip(levels).filter(|(&n, _)| n > 0).map(|(_, &l)| l).max() else {
        return out;
    };
    let mut size = 0.0f64;
    for level in (0..=deepest).rev() {
        let here: Vec<usize> = (0..runs.len()).filter(|&i| levels[i] == level && runs[i] > 0).collect();
        let largest = here.iter().map(|&i| runs[i]).max().unwrap_or(0) as f64;
        size = if level == deepest { largest } else { (size / ratio(level + 1)).max(largest) };
        match (k, here.as_slice()) {
            (1, &[only]) => out[only] = out[only].max(size as u64),
            _ => {
                for _ in here.len()..k {
                    out.push(size as u64);
                }
            }
        }
    }
    out
}

/// The bits per key for tables written to `target` under `allocation`, with
/// `bits_per_key` the configured (average) budget and `shape` the policy's
/// full tree. The policy's
/// [`super::CompactionPolicy::bloom_bits_for_level`] may still adjust it.
///
/// Under Monkey the write gets its share of the optimum over the projected
/// full tree ([`project_full`]), but never more than the budget left once the
/// filters already in force are paid for ([`bits_in_force`]): the whole tree's
/// filters stay within `bits_per_key` on average, whatever order the runs were
/// written in. Without that cap, runs sized while the tree was small keep their
/// bits and the tree ends up with more filter memory than `Uniform` would use.
pub fn bits_for_write(
    allocation: BloomAllocation,
    view: &LsmView,
    target: &WriteTarget<'_>,
    bits_per_key: f64,
    shape: FullShape<'_>,
) -> f64 {
    match allocation {
        BloomAllocation::Uniform => bits_per_key,
        BloomAllocation::Monkey => {
            if !(bits_per_key > 0.0 && bits_per_key.is_finite()) {
                return 0.0;
            }
            let (runs, at) = run_entries_after(view, target);
            let levels = run_levels_after(view, target);
            let ideal = allocate(&project_full(&runs, &levels, shape), bits_per_key)
                .get(at)
                .copied()
                .unwrap_or(bits_per_key);
            let total: f64 = runs.iter().map(|&n| n as f64).sum();
            let left = bits_per_key * total - bits_in_force(view, target, bits_per_key);
            let cap = left / target.entries.max(1) as f64;
            ideal.min(cap).max(0.0)
        }
    }
}

/// The bits per key a table written to `target` gets: the options' allocation
/// over the policy's full tree, then the policy's own adjustment
/// ([`super::CompactionPolicy::bloom_bits_for_level`], e.g. dLSM's).
pub fn table_bits(
    opts: &Options,
    policy: &dyn CompactionPolicy,
    view: &LsmView,
    target: &WriteTarget<'_>,
) -> f64 {
    let level_ratios = full_level_ratios(opts, policy, view);
    let shape = full_shape(opts, policy, &level_ratios);
    let allocated = bits_for_write(opts.bloom_allocation, view, target, opts.bloom_bits_per_key, shape);
    policy.bloom_bits_for_level(view, target.level, allocated)
}

/// Each level's ratio to the one above in the policy's full tree.
fn full_level_ratios(opts: &Options, policy: &dyn CompactionPolicy, view: &LsmView) -> Vec<f64> {
    (0..view.levels.len())
        .map(|l| policy.full_level_ratio(view, l).unwrap_or(opts.max_bytes_for_level_multiplier))
        .collect()
}

fn full_shape<'a>(opts: &Options, policy: &dyn CompactionPolicy, level_ratios: &'a [f64]) -> FullShape<'a> {
    FullShape {
        ratio: opts.max_bytes_for_level_multiplier,
        level_ratios,
        runs_per_level: policy.runs_per_full_level(),
    }
}

/// Under Monkey, when the policy has nothing to do: one table whose filter is
/// more than [`REBUILD_BITS`] away from its run's share of the optimum over
/// the tree as it is now (projected full, with the policy's
/// `bloom_bits_for_level` on top, as [`table_bits`] sizes a write), to be rebuilt at that share without rewriting its data
/// ([`CompactionTask::Refilter`]). A table keeps the bits it was written with,
/// and in a growing tree the levels' shares move: the deep levels written
/// while they were the largest keep too many bits, and the budget left for
/// the levels above stays too small. Thinning comes first (the file with
/// most bits to give back), since it frees budget; a filter is thickened
/// only while the tree's filters stay within `bits_per_key` on average,
/// L0's shares kept back (of its files, and of the runs it will hold). L0
/// files (soon merged), DTables of several segments, files without a filter
/// or with unrecorded bits, busy files, files a compaction buffer holds, and
/// runs the optimum gives no filter are left alone. Converges: a refilter
/// keeps the runs' entries, and the few bytes it adds move the estimate of
/// a memtable's entries by a sliver of a bit.
pub fn refilter_pick(opts: &Options, policy: &dyn CompactionPolicy, view: &LsmView) -> Option<PickResult> {
    let budget = opts.bloom_bits_per_key;
    if opts.bloom_allocation != BloomAllocation::Monkey || !(budget > 0.0 && budget.is_finite()) {
        return None;
    }
    let mut runs = Vec::new();
    let mut levels = Vec::new();
    let mut bytes = 0u64;
    for (l, level) in view.levels.iter().enumerate() {
        for run in &level.runs {
            runs.push(run.files.iter().map(|f| f.num_entries).sum::<u64>());
            levels.push(l);
            bytes += run.files.iter().map(|f| f.size).sum::<u64>();
        }
    }
    let entries: u64 = runs.iter().sum();
    let total = entries as f64;
    // The L0 runs to come count in the optimum too: they are the smallest
    // runs, with the largest shares, and are written with what the budget
    // has left, so their bits are kept back from the thickening of deeper
    // files. As many as L0 holds on average under writes (it fills up to
    // the compaction trigger and is emptied), each a memtable's entries.
    let real = runs.len();
    let flush_entries = (opts.write_buffer_size as u64).saturating_mul(entries) / bytes.max(1);
    let l0_now = levels.iter().filter(|&&l| l == 0).count();
    for _ in l0_now..opts.level0_file_num_compaction_trigger.div_ceil(2) {
        runs.push(flush_entries.max(1));
        levels.push(0);
    }
    let level_ratios = full_level_ratios(opts, policy, view);
    let ideal = allocate(&project_full(&runs, &levels, full_shape(opts, policy, &level_ratios)), budget);
    let mut reserve: f64 =
        (real..runs.len()).map(|i| runs[i] as f64 * ideal.get(i).copied().unwrap_or(0.0)).sum();
    let mut spent = 0.0;
    // (file, entries, has, wants), for every file a refilter may touch.
    let mut candidates = Vec::new();
    let mut at = 0;
    for (l, level) in view.levels.iter().enumerate() {
        let buffered: HashSet<u64> = level
            .buffers
            .iter()
            .flat_map(|b| &b.tables)
            .flat_map(|t| &t.entries)
            .filter_map(|e| e.file)
            .collect();
        for run in &level.runs {
            // As a write to this run is sized (`table_bits`): the policy's own
            // adjustment on top (dLSM's buffer bits), else a rebuild undoes it.
            let want = policy.bloom_bits_for_level(view, l, ideal.get(at).copied().unwrap_or(0.0));
            at += 1;
            for f in &run.files {
                spent += f.num_entries as f64 * f.bloom_bits_per_key.unwrap_or(budget);
                let Some(has) = f.bloom_bits_per_key.filter(|&b| b > 0.0) else { continue };
                if l == 0 {
                    reserve += f.num_entries as f64 * (want - has).max(0.0);
                    continue;
                }
                if f.being_compacted || f.segments != 1 || buffered.contains(&f.id) || want <= 0.0 {
                    continue;
                }
                candidates.push((FileRef { level: l, run: run.id, file: f.id }, f.num_entries, has, want));
            }
        }
    }
    let pick = |(file, _, _, want): &(FileRef, u64, f64, f64)| {
        PickResult::task(CompactionTask::Refilter { file: file.clone(), bits_per_key: *want }, 0.0)
    };
    let thinnest = candidates
        .iter()
        .filter(|(_, _, has, want)| has - want > REBUILD_BITS)
        .max_by(|a, b| (a.2 - a.3).total_cmp(&(b.2 - b.3)));
    if let Some(c) = thinnest {
        return Some(pick(c));
    }
    // The runs to come bring their entries' budget along.
    let coming: u64 = runs.get(real..).unwrap_or_default().iter().sum();
    // (With a hair of slack: a tree at its shares spends the budget exactly.)
    let room = budget * (total + coming as f64) * (1.0 + 1e-9) - spent - reserve;
    candidates
        .iter()
        .filter(|(_, n, has, want)| want - has > REBUILD_BITS && *n as f64 * (want - has) <= room)
        .max_by(|a, b| (a.3 - a.2).total_cmp(&(b.3 - b.2)))
        .map(pick)
}

/// How far (bits per key) a table's filter may drift from its run's share
/// before [`refilter_pick`] rebuilds it in place: half a bit, a 1.27x
/// false-positive rate. Rebuilding costs a read of the table and a write of
/// its filter; at small budgets (2 bits) a whole bit is most of a share, and
/// the largest level, a fraction of a bit short, would keep most of the
/// wasted probes while the budget went unspent.
pub const REBUILD_BITS: f64 = 0.5;

/// How many bits per key thinner than its new level's share a moved file's
/// filter may be before the move rewrites it (one bit: a 1.6x false-positive rate).
pub const REFILTER_BITS: f64 = 1.0;

/// Under Monkey, a trivial move of a file whose filter is more than
/// [`REFILTER_BITS`] thinner than its destination's share becomes a merge of
/// that one file into the same run, which writes it again with the right
/// filter. A table keeps its filter for life, and without this a level born
/// by moves (the first files of a new deepest level, or L1 under a sequential
/// load) keeps filters sized for the level above, where the file was one of
/// the largest runs; the bits it should have had go unspent. Moves with buffer
/// actions, of files whose bits were not recorded, or under `Uniform` stay
/// moves. The result is a pick like any other: the caller validates it.
pub fn refilter_move(
    opts: &Options,
    policy: &dyn CompactionPolicy,
    view: &LsmView,
    pick: &PickResult,
) -> Option<PickResult> {
    let CompactionTask::Move { file, to_level, to_run } = &pick.task else { return None };
    if opts.bloom_allocation != BloomAllocation::Monkey || !pick.buffer.is_empty() {
        return None;
    }
    let f = view.file(file)?;
    let has = f.bloom_bits_per_key?;
    let inputs = std::slice::from_ref(file);
    let target = WriteTarget { level: *to_level, run: *to_run, inputs, entries: f.num_entries };
    if has >= table_bits(opts, policy, view, &target) - REFILTER_BITS {
        return None;
    }
    let task = CompactionTask::Merge {
        inputs: vec![file.clone()],
        output_level: *to_level,
        output_run: *to_run,
        target_file_size: u64::MAX,
        reason: "refilter",
    };
    Some(PickResult { task, ..pick.clone() })
}

/// The level of each run [`run_entries_after`] returns, in the same order.
fn run_levels_after(view: &LsmView, target: &WriteTarget<'_>) -> Vec<usize> {
    let mut levels: Vec<usize> =
        (view.levels.iter().enumerate()).flat_map(|(l, level)| level.runs.iter().map(move |_| l)).collect();
    let existing = view
        .level(target.level)
        .is_some_and(|l| l.runs.iter().any(|r| target.run == RunTarget::Existing(r.id)));
    if !existing {
        levels.push(target.level);
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::policy::tests::fv;
    use crate::compaction::policy::{FileView, RunView};

    const LN2SQ: f64 = LN_2 * LN_2;
    const SHAPE: FullShape<'static> = FullShape { ratio: 10.0, level_ratios: &[], runs_per_level: 1 };

    fn fpr(bits: f64) -> f64 {
        (-bits * LN2SQ).exp()
    }

    /// The allocation spends exactly the budget, and every run with a filter
    /// has a false-positive rate proportional to its entries (the optimum).
    fn check_optimal(entries: &[u64], avg: f64, bits: &[f64]) {
        let total: f64 = entries.iter().map(|&n| n as f64).sum();
        let spent: f64 = entries.iter().zip(bits).map(|(&n, &b)| n as f64 * b).sum();
        assert!((spent - avg * total).abs() < 1e-6 * avg * total, "spent {spent}, budget {}", avg * total);
        let ratios: Vec<f64> =
            entries.iter().zip(bits).filter(|(_, &b)| b > 0.0).map(|(&n, &b)| fpr(b) / n as f64).collect();
        for r in &ratios {
            assert!((r / ratios[0] - 1.0).abs() < 1e-9, "p_i / N_i differs: {ratios:?}");
        }
        // A run left without a filter is one whose optimal rate would be >= 1.
        let lambda = ratios[0];
        for (&n, &b) in entries.iter().zip(bits) {
            if b == 0.0 && n > 0 {
                assert!(lambda * n as f64 >= 1.0 - 1e-9, "run of {n} entries lost its filter needlessly");
            }
        }
    }

    #[test]
    fn worked_example_ratio_10_five_levels_10_bits() {
        // T = 10, L = 5: N = 1, 10, 100, 1000, 10000 (11111 entries), 10 bits/key
        // on average, so M = 111110 bits. With p_i = λ N_i:
        //   ln λ = -(M (ln 2)^2 + Σ N_i ln N_i) / Σ N_i
        //        = -(111110 * 0.480453 + 43210 * ln 10) / 11111
        //        = -(53383.1 + 99494.7) / 11111 = -13.7591
        //   bits_i = -(ln N_i + ln λ) / (ln 2)^2 = (13.7591 - ln N_i) / 0.480453
        //   N = 10000: (13.7591 - 9.2103) / 0.480453 =  9.468
        //   N =  1000: (13.7591 - 6.9078) / 0.480453 = 14.260
        //   N =   100: 19.053, N = 10: 23.845, N = 1: 28.638
        // (each level up: ln 10 / (ln 2)^2 = 4.79 bits more). Check: 94677 + 14260
        // + 1905 + 238 + 29 = 111110. Σ p_i = 0.0118, against 5 * 0.0082 =
        // 0.041 for 10 bits everywhere.
        let entries = [1, 10, 100, 1000, 10000];
        let bits = allocate(&entries, 10.0);
        let want = [28.638, 23.845, 19.053, 14.260, 9.468];
        for (b, w) in bits.iter().zip(want) {
            assert!((b - w).abs() < 0.005, "{bits:?} != {want:?}");
        }
        check_optimal(&entries, 10.0, &bits);
        let monkey: f64 = bits.iter().map(|&b| fpr(b)).sum();
        let uniform = 5.0 * fpr(10.0);
        assert!((monkey - 0.0118).abs() < 0.0001 && (uniform - 0.041).abs() < 0.0005, "{monkey} {uniform}");
    }

    #[test]
    fn tiny_budget_leaves_the_largest_runs_without_filter() {
        // 0.5 bits/key: solved over all five runs, ln λ = -9.1948 and the
        // 10000-entry run would get ln p = 9.2103 - 9.1948 > 0, p > 1: no filter.
        // Re-solved over 1..1000 (1111 entries): ln λ = -(2669.2 + 3210 ln 10)
        // / 1111 = -9.0553, so N = 1000 gets (9.0553 - 6.9078) / 0.480453 = 4.47,
        // N = 100: 9.26, N = 10: 14.05, N = 1: 18.85. Since p ∝ N, a thin
        // budget drops the deepest (largest) levels first, never the small ones.
        let entries = [1, 10, 100, 1000, 10000];
        let bits = allocate(&entries, 0.5);
        assert_eq!(bits[4], 0.0);
        for (b, w) in bits.iter().zip([18.85, 14.05, 9.26, 4.47]) {
            assert!((b - w).abs() < 0.01, "{bits:?}");
        }
        check_optimal(&entries, 0.5, &bits);
        // Thinner still: the two largest go.
        let bits = allocate(&entries, 0.01);
        assert_eq!((bits[3], bits[4]), (0.0, 0.0), "{bits:?}");
        assert!(bits[2] > 0.0);
        check_optimal(&entries, 0.01, &bits);
    }

    #[test]
    fn non_geometric_sizes_and_equal_runs() {
        // Garnering-like ratios that grow toward the top, with an empty level.
        let entries = [7, 0, 40, 900, 2500, 60000];
        let bits = allocate(&entries, 6.0);
        assert_eq!(bits[1], 0.0);
        let filled: Vec<f64> = bits.iter().enumerate().filter(|&(i, _)| i != 1).map(|(_, &b)| b).collect();
        assert!(filled.windows(2).all(|w| w[0] > w[1]), "{bits:?}");
        check_optimal(&entries, 6.0, &bits);
        // Equal runs (a tiered level): the average everywhere.
        for b in allocate(&[500, 500, 500], 8.0) {
            assert!((b - 8.0).abs() < 1e-9);
        }
        // One run: all of the budget.
        assert!((allocate(&[123], 10.0)[0] - 10.0).abs() < 1e-9);
    }

    #[test]
    fn zero_budget_or_empty_tree_gives_no_filters() {
        assert_eq!(allocate(&[1, 10, 100], 0.0), vec![0.0; 3]);
        assert_eq!(allocate(&[1, 10, 100], f64::NAN), vec![0.0; 3]);
        assert_eq!(allocate(&[0, 0], 10.0), vec![0.0; 2]);
        assert!(allocate(&[], 10.0).is_empty());
    }

    #[test]
    fn tiny_runs_are_capped() {
        let bits = allocate(&[1, u64::MAX / 4], 40.0);
        assert_eq!(bits[0], MAX_BITS_PER_KEY);
    }

    fn files(entries: &[(u64, u64)]) -> Vec<FileView> {
        entries
            .iter()
            .map(|&(id, n)| FileView { num_entries: n, ..fv(id, id * 10, id * 10 + 5, n) })
            .collect()
    }

    /// L0: two runs of 10; L1: one run of 100 (files 3, 4); L2: 1000.
    fn view() -> LsmView {
        let mut v = LsmView::new(3);
        v.levels[0].runs =
            vec![RunView { id: 20, files: files(&[(1, 10)]) }, RunView { id: 21, files: files(&[(2, 10)]) }];
        v.levels[1].runs = vec![RunView { id: 22, files: files(&[(3, 60), (4, 40)]) }];
        v.levels[2].runs = vec![RunView { id: 23, files: files(&[(5, 1000)]) }];
        v
    }

    #[test]
    fn runs_after_a_write() {
        let v = view();
        let flush = WriteTarget { level: 0, run: RunTarget::New, inputs: &[], entries: 10 };
        assert_eq!(run_entries_after(&v, &flush), (vec![10, 10, 100, 1000, 10], 4));
        // L0 -> L1 merging both L0 runs and file 3.
        let inputs = [
            FileRef { level: 0, run: 20, file: 1 },
            FileRef { level: 0, run: 21, file: 2 },
            FileRef { level: 1, run: 22, file: 3 },
        ];
        let merge = WriteTarget { level: 1, run: RunTarget::Existing(22), inputs: &inputs, entries: 80 };
        assert_eq!(run_entries_after(&v, &merge), (vec![0, 0, 120, 1000], 2));
        let empty = WriteTarget { level: 0, run: RunTarget::New, inputs: &[], entries: 0 };
        assert_eq!(run_entries_after(&LsmView::new(3), &empty), (vec![1], 0));
    }

    /// `view()` with filters below the budget on average (9500 bits for 1120
    /// entries), the deep run thinnest, as Monkey leaves a tree whose upper
    /// levels are not full.
    fn view_with_monkey_bits() -> LsmView {
        let mut v = view();
        for (l, level) in v.levels.iter_mut().enumerate() {
            for f in level.runs.iter_mut().flat_map(|r| r.files.iter_mut()) {
                f.bloom_bits_per_key = Some([15.0, 12.0, 8.0][l]);
            }
        }
        v
    }

    #[test]
    fn uniform_is_the_budget_everywhere_and_monkey_follows_the_shape() {
        let v = view_with_monkey_bits();
        let targets = [
            WriteTarget { level: 0, run: RunTarget::New, inputs: &[], entries: 10 },
            WriteTarget { level: 1, run: RunTarget::Existing(22), inputs: &[], entries: 5 },
            WriteTarget { level: 2, run: RunTarget::Existing(23), inputs: &[], entries: 5 },
        ];
        for t in &targets {
            assert_eq!(bits_for_write(BloomAllocation::Uniform, &v, t, 7.5, SHAPE), 7.5);
            assert_eq!(bits_for_write(BloomAllocation::Uniform, &v, t, 0.0, SHAPE), 0.0);
            assert_eq!(bits_for_write(BloomAllocation::Monkey, &v, t, 0.0, SHAPE), 0.0);
        }
        let m: Vec<f64> =
            targets.iter().map(|t| bits_for_write(BloomAllocation::Monkey, &v, t, 10.0, SHAPE)).collect();
        assert!(m[0] > 10.0 && m[0] > m[1] && m[1] > m[2] && m[2] < 10.0, "{m:?}");
        // An empty tree: the first flush's run is all there is.
        let first = bits_for_write(BloomAllocation::Monkey, &LsmView::new(3), &targets[0], 10.0, SHAPE);
        assert!((first - 10.0).abs() < 1e-9);
    }

    #[test]
    fn projection_fills_the_levels_above_the_deepest() {
        let leveled = FullShape { ratio: 10.0, level_ratios: &[], runs_per_level: 1 };
        // One run of 1000 at L3, ratio 10: L2, L1 and L0 are missing 100, 10, 1.
        assert_eq!(project_full(&[1000], &[3], leveled), vec![1000, 100, 10, 1]);
        // A level's run counts at its full size; one already larger keeps its
        // size and sets the bar for the levels above it.
        assert_eq!(project_full(&[5, 400, 1000], &[0, 2, 3], leveled), vec![5, 400, 1000, 40]);
        assert_eq!(project_full(&[1, 30, 1000], &[1, 2, 3], leveled), vec![10, 100, 1000, 1]);
        // Tiering, r = 4: full levels hold three runs, the deepest too.
        let tiered = FullShape { ratio: 4.0, level_ratios: &[], runs_per_level: 3 };
        assert_eq!(project_full(&[64, 640], &[1, 2], tiered), vec![64, 640, 640, 640, 160, 160, 40, 40, 40]);
        // No ratio, or nothing below: unchanged.
        assert_eq!(
            project_full(&[5, 1000], &[0, 3], FullShape { ratio: 1.0, level_ratios: &[], runs_per_level: 1 }),
            vec![5, 1000]
        );
        assert_eq!(project_full(&[7], &[0], leveled), vec![7]);
        // Per-level ratios (Garnering's T / c^(L-i), T = 10, c = 0.5, L = 3:
        // L1/L0 40, L2/L1 20, L3/L2 10): each level above is sized by its own.
        let garnering = FullShape { ratio: 10.0, level_ratios: &[1.0, 40.0, 20.0, 10.0], runs_per_level: 1 };
        assert_eq!(project_full(&[8000], &[3], garnering), vec![8000, 800, 40, 1]);
        assert!(project_full(&[], &[], leveled).is_empty());
    }

    fn spent(v: &LsmView) -> f64 {
        let t = WriteTarget { level: 0, run: RunTarget::New, inputs: &[], entries: 0 };
        bits_in_force(v, &t, f64::NAN)
    }

    /// The regression: a tiered cascade writes each large run while every level
    /// above it is empty, so sizing it for that moment gave it the whole
    /// average, and the small runs written later got more on top: the tree
    /// used more filter memory than uniform filters (the test comparing them
    /// failed once the tree's shape stopped depending on thread timing).
    #[test]
    fn monkey_stays_within_the_budget_when_runs_arrive_bottom_up() {
        const AVG: f64 = 10.0;
        let mut v = LsmView::new(4);
        let mut next = 1;
        let mut add = |v: &mut LsmView, level: usize, entries: u64| {
            let t = WriteTarget { level, run: RunTarget::New, inputs: &[], entries };
            let b = bits_for_write(
                BloomAllocation::Monkey,
                v,
                &t,
                AVG,
                FullShape { ratio: 4.0, level_ratios: &[], runs_per_level: 3 },
            );
            let mut f = fv(next, 0, 1000, entries);
            (f.num_entries, f.bloom_bits_per_key) = (entries, Some(b));
            v.levels[level].runs.push(RunView { id: 100 + next, files: vec![f] });
            next += 1;
            b
        };
        // Three runs land on L3 while nothing is above them, then the levels
        // above fill from the top.
        let deep: Vec<f64> = (0..3).map(|_| add(&mut v, 3, 6400)).collect();
        assert!(deep.iter().all(|&b| b < AVG), "{deep:?}");
        let upper: Vec<f64> = [(2, 1600), (2, 1600), (1, 400), (1, 400), (0, 100)]
            .iter()
            .map(|&(l, n)| add(&mut v, l, n))
            .collect();
        assert!(upper.iter().all(|&b| b > AVG), "{upper:?}");
        let entries: u64 = 3 * 6400 + 2 * 1600 + 2 * 400 + 100;
        assert!(spent(&v) <= AVG * entries as f64 + 1e-6, "{} > {}", spent(&v), AVG * entries as f64);
    }

    /// Filters already in force at the full average (a tree built under
    /// `Uniform`, then reopened with Monkey) leave no budget to give a new run
    /// more than the average: the cap holds even against the optimum.
    #[test]
    fn filters_in_force_cap_what_a_new_run_gets() {
        let mut v = view();
        for f in v.levels.iter_mut().flat_map(|l| l.runs.iter_mut()).flat_map(|r| r.files.iter_mut()) {
            f.bloom_bits_per_key = Some(10.0);
        }
        let flush = WriteTarget { level: 0, run: RunTarget::New, inputs: &[], entries: 10 };
        let b = bits_for_write(BloomAllocation::Monkey, &v, &flush, 10.0, SHAPE);
        assert!((b - 10.0).abs() < 1e-9, "{b}");
        // Files recorded with no bits (`None`) count at the average too.
        let b = bits_for_write(BloomAllocation::Monkey, &view(), &flush, 10.0, SHAPE);
        assert!((b - 10.0).abs() < 1e-9, "{b}");
        // A merge frees its inputs' bits for its output.
        let inputs = [FileRef { level: 1, run: 22, file: 3 }];
        let merge = WriteTarget { level: 2, run: RunTarget::Existing(23), inputs: &inputs, entries: 60 };
        let b = bits_for_write(BloomAllocation::Monkey, &v, &merge, 10.0, SHAPE);
        assert!(b > 0.0 && b <= 10.0 + 1e-9, "{b}");
    }

    /// The regression: under Monkey a level born by trivial moves kept filters
    /// sized for the level above, so its share of the budget went unspent and
    /// Monkey wasted more probes than uniform filters on a growing tree. A
    /// move of a file far thinner than its destination's share is now a
    /// one-file merge into the same run; other moves stay moves.
    #[test]
    fn a_move_of_a_file_with_too_thin_a_filter_rewrites_it() {
        use crate::compaction::{LeveledConfig, LeveledPolicy};
        let policy = LeveledPolicy::new(LeveledConfig {
            num_levels: 4,
            l0_trigger: 4,
            max_bytes_for_level_base: 1 << 20,
            multiplier: 10.0,
            target_file_size: 200 << 10,
        })
        .unwrap();
        let view_with = |bits: f64| {
            let mut v = LsmView::new(4);
            let mut moved = fv(1, 0, 5, 1000);
            (moved.num_entries, moved.bloom_bits_per_key) = (1000, Some(bits));
            let mut deep = fv(2, 0, 100, 10_000);
            (deep.num_entries, deep.bloom_bits_per_key) = (10_000, Some(9.0));
            v.levels[1].runs = vec![RunView { id: 30, files: vec![moved] }];
            v.levels[3].runs = vec![RunView { id: 31, files: vec![deep] }];
            v
        };
        let file = FileRef { level: 1, run: 30, file: 1 };
        let task = CompactionTask::Move { file: file.clone(), to_level: 2, to_run: RunTarget::New };
        let pick = PickResult { compact_pointer: Some((1, b"k".to_vec())), ..PickResult::task(task, 1.5) };
        let monkey = Options::default().with_bloom_allocation(BloomAllocation::Monkey);
        let thin = view_with(2.0);
        let share = table_bits(
            &monkey,
            &policy,
            &thin,
            &WriteTarget {
                level: 2,
                run: RunTarget::New,
                inputs: std::slice::from_ref(&file),
                entries: 1000,
            },
        );
        assert!(share > 2.0 + REFILTER_BITS && share < 20.0, "{share}");
        let merge = refilter_move(&monkey, &policy, &thin, &pick).expect("rewritten");
        assert_eq!(
            merge.task,
            CompactionTask::Merge {
                inputs: vec![file],
                output_level: 2,
                output_run: RunTarget::New,
                target_file_size: u64::MAX,
                reason: "refilter",
            }
        );
        assert_eq!((merge.compact_pointer, merge.score), (pick.compact_pointer.clone(), pick.score));
        // Close enough to its share, thicker, unrecorded, or under Uniform: a move.
        assert!(refilter_move(&monkey, &policy, &view_with(share - 0.5), &pick).is_none());
        assert!(refilter_move(&monkey, &policy, &view_with(share + 5.0), &pick).is_none());
        let mut unrecorded = thin.clone();
        unrecorded.levels[1].runs[0].files[0].bloom_bits_per_key = None;
        assert!(refilter_move(&monkey, &policy, &unrecorded, &pick).is_none());
        assert!(refilter_move(&Options::default(), &policy, &thin, &pick).is_none());
    }

    /// Filters rebuilt in place: the deep file that kept the bits it got
    /// while it was the largest run is thinned first; a thin upper file is
    /// thickened only within the budget (L0's share kept back); busy files,
    /// DTables, L0 files and uniform bits are left alone; a tree at its
    /// shares asks for nothing.
    #[test]
    fn refilter_thins_first_and_thickens_within_the_budget() {
        use crate::compaction::{LeveledConfig, LeveledPolicy};
        let policy = LeveledPolicy::new(LeveledConfig {
            num_levels: 3,
            l0_trigger: 4,
            max_bytes_for_level_base: 1 << 20,
            multiplier: 10.0,
            target_file_size: 200 << 10,
        })
        .unwrap();
        let monkey = Options::default()
            .with_bloom_allocation(BloomAllocation::Monkey)
            .with_bloom_bits_per_key(10.0)
            .with_write_buffer_size(1 << 10)
            .with_max_bytes_for_level_multiplier(10.0);
        // L1: 1 000 entries at `upper` bits; L2: 10 000 at `deep` bits.
        let tree = |upper: f64, deep: f64| {
            let mut v = LsmView::new(3);
            let mut a = fv(1, 0, 5, 100_000);
            (a.num_entries, a.bloom_bits_per_key) = (1000, Some(upper));
            let mut b = fv(2, 0, 100, 1_000_000);
            (b.num_entries, b.bloom_bits_per_key) = (10_000, Some(deep));
            v.levels[1].runs = vec![RunView { id: 30, files: vec![a] }];
            v.levels[2].runs = vec![RunView { id: 31, files: vec![b] }];
            v
        };
        let refiltered = |v: &LsmView| match refilter_pick(&monkey, &policy, v).map(|p| p.task) {
            Some(CompactionTask::Refilter { file, bits_per_key }) => Some((file.file, bits_per_key)),
            other => {
                assert!(other.is_none(), "{other:?}");
                None
            }
        };
        // The deep file kept the 12 bits it got when it was written, the upper
        // one 2: the deep file gives first.
        let (file, deep_share) = refiltered(&tree(2.0, 12.0)).expect("a refilter");
        assert!(file == 2 && deep_share < 12.0 - REBUILD_BITS, "{file} {deep_share}");
        // Then the upper file takes what that freed.
        let (file, upper_share) = refiltered(&tree(2.0, deep_share)).expect("a refilter");
        assert!(file == 1 && upper_share > deep_share + REBUILD_BITS, "{file} {upper_share}");
        assert_eq!(refiltered(&tree(upper_share, deep_share)), None, "at its shares the tree is settled");
        // Thickening never goes past the budget: with the deep file at 12 bits, no room.
        assert_eq!(refiltered(&tree(6.0, 12.0)).map(|r| r.0), Some(2), "thins first");
        let mut busy = tree(6.0, 12.0);
        busy.levels[2].runs[0].files[0].being_compacted = true;
        assert_eq!(refiltered(&busy), None, "the only room is in a busy file");
        let mut dtable = tree(2.0, 12.0);
        dtable.levels[2].runs[0].files[0].segments = 2;
        assert_eq!(refiltered(&dtable), None);
        let uniform = Options { bloom_allocation: BloomAllocation::Uniform, ..monkey.clone() };
        assert!(refilter_pick(&uniform, &policy, &tree(2.0, 12.0)).is_none());
        // A policy that adds bits on top of Monkey's share (as dLSM does for
        // the tables that feed its buffers): a rebuild keeps them.
        #[derive(Debug)]
        struct Extra(LeveledPolicy);
        impl CompactionPolicy for Extra {
            fn name(&self) -> &str {
                "extra"
            }
            fn num_levels(&self) -> usize {
                self.0.num_levels()
            }
            fn pick(&self, v: &LsmView) -> Option<PickResult> {
                self.0.pick(v)
            }
            fn scores(&self, v: &LsmView) -> Vec<f64> {
                self.0.scores(v)
            }
            fn level_target_bytes(&self, v: &LsmView, level: usize) -> Option<u64> {
                self.0.level_target_bytes(v, level)
            }
            fn compact_range(
                &self,
                v: &LsmView,
                level: usize,
                range: &crate::compaction::ManualRange<'_>,
            ) -> Option<PickResult> {
                self.0.compact_range(v, level, range)
            }
            fn inner(&self) -> Option<&dyn CompactionPolicy> {
                Some(&self.0)
            }
            fn bloom_bits_for_level(&self, _: &LsmView, level: usize, bits: f64) -> f64 {
                if level == 1 {
                    bits + 5.0
                } else {
                    bits
                }
            }
        }
        let extra = Extra(policy.clone());
        let settled = tree(upper_share + 5.0, deep_share);
        assert_eq!(refilter_pick(&monkey, &extra, &settled).map(|p| p.task), None, "the extra bits are kept");
        assert!(
            refilter_pick(&monkey, &policy, &settled).is_some(),
            "without them the upper file is thinned"
        );
        let mut l0 = LsmView::new(3);
        let mut f = fv(1, 0, 5, 100_000);
        (f.num_entries, f.bloom_bits_per_key) = (1000, Some(1.0));
        l0.levels[0].runs = vec![RunView { id: 30, files: vec![f] }];
        assert_eq!(refiltered(&l0), None, "L0 files are not refiltered");
    }
}
