//! Every link in the docs and every repository path named in docs, code
//! comments and scripts points at something that exists: a reader of the
//! crate has only the repository, so a dangling reference is a bug.

use std::path::{Path, PathBuf};

/// Top-level directories whose paths, when named in text, must exist.
const ROOTS: [&str; 5] = ["docs/", "scripts/", "crates/", "fuzz/", ".ci/"];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Text files a reader sees: docs, sources, scripts, manifests. Raw benchmark
/// output under `docs/bench/` is what a run printed, not prose.
fn text_files(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            let skip = ["target", ".git", "corpus", "artifacts"].contains(&name.as_str())
                || rel == "docs/bench"
                || name.starts_with("target");
            if !skip {
                text_files(&path, root, out);
            }
        } else if [".md", ".rs", ".sh", ".toml"].iter().any(|e| name.ends_with(e)) || rel == ".ci/run" {
            out.push(path);
        }
    }
}

/// Targets of markdown links `[text](target)`, without anchors or web links.
fn markdown_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let end = rest.find(|c: char| c == ')' || c.is_whitespace()).unwrap_or(rest.len());
        let target = rest[..end].split('#').next().unwrap_or("");
        let web = ["http://", "https://", "mailto:"].iter().any(|p| target.starts_with(p));
        if !target.is_empty() && !web && !target.contains("::") {
            out.push(target.to_string());
        }
    }
    out
}

/// A repository path named in text: `(path, is_prefix_of_a_glob)`.
fn named_paths(text: &str) -> Vec<(String, bool)> {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let mut out = Vec::new();
    for root in ROOTS {
        for (i, _) in text.match_indices(root) {
            if text[..i].chars().next_back().is_some_and(|c| is_path_char(c) || c == '/') {
                continue; // inside a longer path or word
            }
            let len = text[i..].find(|c: char| !is_path_char(c)).unwrap_or(text.len() - i);
            let next = text[i + len..].chars().next();
            if matches!(next, Some('<' | '{' | '$')) {
                continue; // a placeholder
            }
            let path = text[i..i + len].trim_end_matches('.');
            let glob = next == Some('*') || path.ends_with('-');
            out.push((path.trim_end_matches('-').to_string(), glob));
        }
    }
    out
}

fn exists(path: &Path, glob: bool) -> bool {
    if !glob {
        return path.exists();
    }
    let (Some(dir), Some(prefix)) = (path.parent(), path.file_name()) else { return false };
    let prefix = prefix.to_string_lossy();
    std::fs::read_dir(dir)
        .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with(prefix.as_ref())))
        .unwrap_or(false)
}

#[test]
fn no_doc_link_or_named_path_points_at_a_missing_file() {
    let root = repo_root();
    let mut files = Vec::new();
    text_files(&root, &root, &mut files);
    assert!(files.len() > 50, "found only {} files under {}", files.len(), root.display());
    let mut missing = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        let rel = file.strip_prefix(&root).unwrap().display().to_string();
        if rel.ends_with("tests/doc_links.rs") {
            continue; // names missing files on purpose, to test the checker
        }
        if rel.ends_with(".md") {
            for target in markdown_links(&text) {
                if !file.parent().unwrap().join(&target).exists() {
                    missing.push(format!("{rel}: link ({target})"));
                }
            }
        }
        for (path, glob) in named_paths(&text) {
            if !exists(&root.join(&path), glob) {
                missing.push(format!("{rel}: names {path}{}", if glob { "*" } else { "" }));
            }
        }
    }
    assert!(missing.is_empty(), "references to files that do not exist:\n{}", missing.join("\n"));
}

#[test]
fn the_checker_finds_links_paths_and_globs() {
    let text = "see [format](FORMAT.md#wal) and [web](https://x.org) and [`Db`](crate::Db);\n\
                output in `docs/bench/lwc/r5-*`, run scripts/delete-range.sh. Also \
                docs/bench/<name>/ and my-docs/x and crates/strata/src/lib.rs.";
    assert_eq!(markdown_links(text), vec!["FORMAT.md".to_string()]);
    let paths = named_paths(text);
    assert!(paths.contains(&("docs/bench/lwc/r5".to_string(), true)), "{paths:?}");
    assert!(paths.contains(&("scripts/delete-range.sh".to_string(), false)), "{paths:?}");
    assert!(paths.contains(&("crates/strata/src/lib.rs".to_string(), false)), "{paths:?}");
    assert_eq!(paths.len(), 3, "placeholders and longer words are not paths: {paths:?}");
    let root = repo_root();
    assert!(exists(&root.join("docs/bench/lwc/r5"), true));
    assert!(!exists(&root.join("docs/no-such-file.md"), false));
}
