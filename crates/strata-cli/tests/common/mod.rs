//! Helpers the CLI test files share: running the built binary, reading its
//! output, opening a database in this process, and a snapshot of a
//! directory tree to tell what a command wrote.

// Each test file uses its own subset.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs the tool with empty input.
pub fn strata(args: &[&str]) -> Output {
    strata_stdin(args, "")
}

/// Runs the tool with `input` on its standard input.
pub fn strata_stdin(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run strata");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("wait for strata")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs and expects success, returning stdout.
pub fn ok(args: &[&str]) -> String {
    let o = strata(args);
    assert!(o.status.success(), "strata {args:?} failed: {}", stderr(&o));
    stdout(&o)
}

/// Runs and expects exit 1, returning stderr.
pub fn fails(args: &[&str]) -> String {
    let o = strata(args);
    assert_eq!(o.status.code(), Some(1), "strata {args:?}: {}{}", stdout(&o), stderr(&o));
    stderr(&o)
}

/// `Db::open` in this process. (A LOCK is a record lock, which no child a
/// sibling test spawns inherits, so a database closed here is free at once.)
pub fn open_here(dir: &Path, opts: strata::Options) -> strata::Db {
    strata::Db::open(dir, opts).unwrap()
}

/// A path as a command-line argument.
pub fn arg(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_string()
}

/// A path, its bytes (none for a directory) and its modification time.
pub type TreeState = Vec<(PathBuf, Option<Vec<u8>>, std::time::SystemTime)>;

/// Every file and directory under `dir` with its bytes (none for a
/// directory) and modification time.
pub fn tree_state(dir: &Path) -> TreeState {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
        if p.is_dir() {
            out.push((p.clone(), None, mtime));
            out.extend(tree_state(&p));
        } else {
            out.push((p.clone(), Some(std::fs::read(&p).unwrap()), mtime));
        }
    }
    out
}
