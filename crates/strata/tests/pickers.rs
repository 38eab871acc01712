//! Table-driven picker tests (after Pebble's datadriven picker tests): each
//! file under `tests/picker_scenarios/` holds cases of a tree described in
//! text and the pick expected, as text. A case is a command line, the tree,
//! `----`, the expected output, and a blank line. Keys are u64s (stored big
//! endian, as the unit tests' fixtures); `N+` in output is the key just after
//! `N`. `STRATA_REWRITE=1` rewrites the expected outputs from what the
//! policies pick (review the diff before committing it).
//!
//! Commands: `pick <policy> [key=value ...]`, `trim <policy> ...`,
//! `compact <policy> ... from=<level> lo=<key> hi=<key>`. Policies: `leveled`,
//! `blsm`, `lsbm`, `dlsm`, `lwc`; keys `levels`, `l0_trigger`, `base`,
//! `multiplier`, `target` (the leveled shape), `max_segments`, `max_table_factor`.
//!
//! Tree lines: `L<n> run=<id>` then indented files `<id>: <lo>-<hi> size=<n>
//! [busy] [segments=<n>]`; `L<n> buffer run=<id> table=<id>` then entries
//! `<id>: <lo>-<hi> size=<n> [cached=<f>]` or `removed: <lo>-<hi>`;
//! `state draining=<level>:<run> old_buffer=<level>:<n> round_in=<level>:<n>
//! frozen=<level>` (the bLSM / LSbM state, encoded for the policy).

use std::fmt::Write as _;
use std::path::Path;

use strata::compaction::lsbm::LevelState;
use strata::compaction::{
    validate_buffer_actions, validate_task, BlsmPolicy, BlsmState, BufferAction, BufferEntryView,
    BufferTableView, BufferVariant, BufferView, CompactionTask, FileRef, FileView, LeveledConfig,
    LeveledPolicy, LsbmPolicy, LsbmState, LsmView, LwcConfig, LwcPolicy, ManualRange, PickResult, RunTarget,
    RunView,
};
use strata::CompactionPolicy;

fn key(s: &str) -> Vec<u8> {
    s.trim().parse::<u64>().unwrap_or_else(|_| panic!("bad key {s:?}")).to_be_bytes().to_vec()
}

fn show_key(k: &[u8]) -> String {
    match k.len() {
        8 => u64::from_be_bytes(k.try_into().unwrap()).to_string(),
        9 if k[8] == 0 => format!("{}+", u64::from_be_bytes(k[..8].try_into().unwrap())),
        _ => format!("{k:02x?}"),
    }
}

/// `key=value` arguments of a line.
fn args<'a>(words: impl Iterator<Item = &'a str>) -> Vec<(&'a str, &'a str)> {
    words.map(|w| w.split_once('=').unwrap_or((w, ""))).collect()
}

fn arg<T: std::str::FromStr>(a: &[(&str, &str)], name: &str, default: T) -> T {
    a.iter()
        .find(|(k, _)| *k == name)
        .map_or(default, |(_, v)| v.parse().unwrap_or_else(|_| panic!("bad value for {name}: {v:?}")))
}

fn range(s: &str) -> (Vec<u8>, Vec<u8>) {
    let (lo, hi) = s.split_once('-').unwrap_or_else(|| panic!("bad range {s:?}"));
    (key(lo), key(hi))
}

fn policy(name: &str, a: &[(&str, &str)]) -> Box<dyn CompactionPolicy> {
    let shape = LeveledConfig {
        num_levels: arg(a, "levels", 3),
        l0_trigger: arg(a, "l0_trigger", 4),
        max_bytes_for_level_base: arg(a, "base", 1000),
        multiplier: arg(a, "multiplier", 10.0),
        target_file_size: arg(a, "target", 100),
    };
    let blsm = || BlsmPolicy::new(shape.clone()).unwrap();
    match name {
        "leveled" => Box::new(LeveledPolicy::new(shape).unwrap()),
        "blsm" => Box::new(blsm()),
        "lsbm" => Box::new(LsbmPolicy::new(blsm(), BufferVariant::Lsbm, arg(a, "trim", 0.8))),
        "dlsm" => Box::new(LsbmPolicy::new(blsm(), BufferVariant::Dlsm, arg(a, "trim", 0.8))),
        "lwc" => {
            let mut cfg = LwcConfig::new(shape);
            cfg.max_segments = arg(a, "max_segments", cfg.max_segments);
            cfg.max_table_factor = arg(a, "max_table_factor", cfg.max_table_factor);
            Box::new(LwcPolicy::new(cfg).unwrap())
        }
        _ => panic!("unknown policy {name:?}"),
    }
}

/// The tree of a case's input lines.
fn tree(lines: &[&str], num_levels: usize, policy: &str) -> LsmView {
    let mut v = LsmView::new(num_levels);
    let mut state = LsbmState::default();
    let mut has_state = false;
    // (level, is_buffer) of the block the indented lines belong to.
    let mut at: Option<(usize, bool)> = None;
    for line in lines {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if line.starts_with(char::is_whitespace) {
            let (level, buffer) = at.expect("an indented line outside a run or buffer");
            let l = &mut v.levels[level];
            let a = args(words.clone());
            if buffer {
                let t = l.buffers.last_mut().and_then(|b| b.tables.last_mut()).unwrap();
                let (file, (lo, hi)) = match first {
                    "removed:" => (None, range(words.next().unwrap())),
                    id => (Some(id.trim_end_matches(':').parse().unwrap()), range(words.next().unwrap())),
                };
                let cached = a.iter().find(|(k, _)| *k == "cached").map(|(_, c)| c.parse().unwrap());
                let size = arg(&a, "size", 0);
                t.entries.push(BufferEntryView {
                    file,
                    size,
                    smallest: lo,
                    largest: hi,
                    cached_fraction: cached,
                });
            } else {
                let (lo, hi) = range(words.next().unwrap());
                l.runs.last_mut().unwrap().files.push(FileView {
                    id: first.trim_end_matches(':').parse().unwrap(),
                    size: arg(&a, "size", 0),
                    smallest: lo,
                    largest: hi,
                    num_entries: arg(&a, "entries", 1),
                    num_deletions: arg(&a, "deletions", 0),
                    being_compacted: a.iter().any(|(k, _)| *k == "busy"),
                    bloom_bits_per_key: None,
                    segments: arg(&a, "segments", 1),
                    num_range_dels: 0,
                });
            }
            continue;
        }
        let a = args(words);
        if first == "state" {
            has_state = true;
            for (k, val) in &a {
                let (level, n) = val.split_once(':').unwrap_or((val, "0"));
                let (level, n): (usize, u64) = (level.parse().unwrap(), n.parse().unwrap());
                if state.levels.len() <= level {
                    state.levels.resize(level + 1, LevelState::default());
                }
                let d = &mut state.blsm.draining;
                match *k {
                    "draining" => {
                        d.resize(d.len().max(level + 1), None);
                        d[level] = Some(n);
                    }
                    "old_buffer" => state.levels[level].old_buffer_size = n,
                    "round_in" => state.levels[level].round_in = n,
                    "frozen" => state.levels[level].frozen = true,
                    _ => panic!("unknown state {k:?}"),
                }
            }
            continue;
        }
        let level: usize = first.strip_prefix('L').and_then(|l| l.parse().ok()).expect(line);
        let run = arg(&a, "run", 0u64);
        if a.iter().any(|(k, _)| *k == "buffer") {
            let table = BufferTableView { id: arg(&a, "table", 0), entries: Vec::new() };
            let bufs = &mut v.levels[level].buffers;
            match bufs.iter_mut().find(|b| b.run == run) {
                Some(b) => b.tables.push(table),
                None => bufs.push(BufferView { run, tables: vec![table] }),
            }
            at = Some((level, true));
        } else {
            v.levels[level].runs.push(RunView { id: run, files: Vec::new() });
            at = Some((level, false));
        }
    }
    if has_state {
        v.policy_state = Some(match policy {
            "lsbm" | "dlsm" => state.encode(),
            _ => state.blsm.encode(),
        });
    }
    v
}

fn refs(rs: &[FileRef]) -> String {
    rs.iter().map(|r| format!("L{}.{}.{}", r.level, r.run, r.file)).collect::<Vec<_>>().join(" ")
}

fn target(level: usize, run: &RunTarget) -> String {
    match run {
        RunTarget::Existing(id) => format!("L{level} run {id}"),
        RunTarget::New => format!("L{level} new run"),
    }
}

/// A pick as text, one fact a line.
fn show(pick: &PickResult) -> String {
    let mut s = String::new();
    let _ = match &pick.task {
        CompactionTask::Merge { inputs, output_level, output_run, target_file_size, reason } => writeln!(
            s,
            "merge {} -> {} files={target_file_size} ({reason})",
            refs(inputs),
            target(*output_level, output_run)
        ),
        CompactionTask::Move { file, to_level, to_run } => {
            writeln!(s, "move {} -> {}", refs(std::slice::from_ref(file)), target(*to_level, to_run))
        }
        CompactionTask::Drop { files } => writeln!(s, "drop {}", refs(files)),
        CompactionTask::UpdateState { reason } => writeln!(s, "state ({reason})"),
        CompactionTask::Append { inputs, targets, bounds, output_level, reason } => {
            let b: Vec<String> = bounds.iter().map(|k| show_key(k)).collect();
            writeln!(
                s,
                "append {} -> L{output_level} {} bounds=[{}] ({reason})",
                refs(inputs),
                refs(targets),
                b.join(" ")
            )
        }
        CompactionTask::Refilter { file, bits_per_key } => {
            writeln!(s, "refilter {} bits={bits_per_key:.2}", refs(std::slice::from_ref(file)))
        }
    };
    let _ = writeln!(s, "score {:.2}", pick.score);
    if let Some((level, k)) = &pick.compact_pointer {
        let _ = writeln!(s, "pointer L{level} {}", show_key(k));
    }
    for a in &pick.buffer {
        let _ = match a {
            BufferAction::Append { file, level, run, table } => writeln!(
                s,
                "buffer append {} -> {} table {table}",
                refs(std::slice::from_ref(file)),
                target(*level, run)
            ),
            BufferAction::RemoveFile { level, run, table, file } => {
                writeln!(s, "buffer remove L{level} run {run} table {table} file {file}")
            }
            BufferAction::DropTable { level, run, table } => {
                writeln!(s, "buffer drop L{level} run {run} table {table}")
            }
        };
    }
    if let Some(st) = &pick.policy_state {
        let _ = match (LsbmState::decode(st), BlsmState::decode(st)) {
            (Some(l), _) => {
                let levels: Vec<String> = (l.levels.iter().enumerate())
                    .filter(|(_, x)| **x != LevelState::default())
                    .map(|(i, x)| {
                        format!(
                            "L{i}:frozen={},round_in={},old_buffer={}",
                            x.frozen, x.round_in, x.old_buffer_size
                        )
                    })
                    .collect();
                writeln!(s, "new state draining={:?} {}", l.blsm.draining, levels.join(" "))
            }
            (None, Some(b)) => writeln!(s, "new state draining={:?}", b.draining),
            _ => writeln!(s, "new state {} bytes", st.len()),
        };
    }
    s
}

/// Runs one case: the output text of its command.
fn run_case(cmd: &str, lines: &[&str]) -> String {
    let mut words = cmd.split_whitespace();
    let (verb, name) = (words.next().unwrap(), words.next().expect("no policy"));
    let a = args(words);
    let p = policy(name, &a);
    let v = tree(lines, p.num_levels(), name);
    let pick = match verb {
        "pick" => p.pick(&v),
        "trim" => p.trim(&v),
        "compact" => {
            let (lo, hi) =
                (key(arg(&a, "lo", String::new()).as_str()), key(arg(&a, "hi", String::new()).as_str()));
            p.compact_range(&v, arg(&a, "from", 0), &ManualRange { start: Some(&lo), end: Some(&hi) })
        }
        _ => panic!("unknown command {verb:?}"),
    };
    let Some(pick) = pick else { return "nothing\n".into() };
    // Every pick a scenario expects must also pass the engine's checks.
    validate_task(&v, &pick.task).unwrap_or_else(|e| panic!("{cmd}: invalid task: {e}"));
    validate_buffer_actions(&v, &pick).unwrap_or_else(|e| panic!("{cmd}: invalid buffer actions: {e}"));
    show(&pick)
}

/// Runs every case of a file; returns the file with the actual outputs and
/// the cases that differ.
fn run_file(text: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut failures = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim().is_empty() || line.starts_with('#') {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let cmd = line;
        let mut input = Vec::new();
        for l in lines.by_ref() {
            if l == "----" {
                break;
            }
            input.push(l);
        }
        let mut expected = String::new();
        while let Some(l) = lines.next_if(|l| !l.trim().is_empty()) {
            expected.push_str(l);
            expected.push('\n');
        }
        let actual = run_case(cmd, &input);
        if actual != expected {
            failures.push(format!("{cmd}\nexpected:\n{expected}actual:\n{actual}"));
        }
        out.push_str(&format!("{cmd}\n"));
        for l in &input {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str("----\n");
        out.push_str(&actual);
    }
    (out, failures)
}

fn check(file: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/picker_scenarios").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let (rewritten, failures) = run_file(&text);
    if std::env::var_os("STRATA_REWRITE").is_some() {
        std::fs::write(&path, rewritten).unwrap();
        return;
    }
    assert!(failures.is_empty(), "{file}:\n{}", failures.join("\n"));
}

#[test]
fn leveled() {
    check("leveled.txt");
}

#[test]
fn lsbm() {
    check("lsbm.txt");
}

#[test]
fn lwc() {
    check("lwc.txt");
}

/// The harness itself: a wrong expectation is reported, not passed.
#[test]
fn a_wrong_expectation_fails() {
    let text = "pick leveled levels=3 l0_trigger=1\nL0 run=101\n  1: 0-9 size=10\n----\nnothing\n";
    let (rewritten, failures) = run_file(text);
    assert_eq!(failures.len(), 1, "{rewritten}");
    assert!(rewritten.contains("move L0.101.1 -> L1 new run"), "{rewritten}");
}
