//! get, put, delete, scan, load, and bulk loading: write-sst and ingest.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use strata::{IngestExternalFileOptions, Keyspace, SstFileWriter, WriteBatch};

use crate::bytes::{parse, show, show_value};
use crate::open::{keyspace, open, open_values, tree, unavailable_merge_operator, Access, Tree};
use crate::progress::Progress;
use crate::{Cli, CliResult, Command};

/// Runs one of the key-value commands.
pub fn run(cli: &Cli) -> CliResult<ExitCode> {
    let hex = cli.hex;
    let key = |s: &str| parse(s, hex);
    let fail = |e: strata::Error| e.to_string();
    match &cli.command {
        Command::Get { key: k, .. } => {
            let k = key(k)?;
            let db = open_values(cli, "get")?;
            let ks = match tree(cli, &db)? {
                Tree::Plain(ks) => ks,
                Tree::Ttl(ks) => return get_ttl(&ks, &k, hex),
            };
            match ks.get(&k).map_err(fail)? {
                Some(v) => {
                    println!("{}", show_value(&v, unavailable_merge_operator(&ks).as_deref(), hex));
                    Ok(ExitCode::SUCCESS)
                }
                None => Err(format!("key {} not found", show(&k, hex))),
            }
        }
        Command::Put { key: k, value, .. } => {
            let (k, v) = (key(k)?, key(value)?);
            let db = open(cli, "put", Access::Write)?;
            keyspace(cli, &db)?.put(&k, &v).map_err(fail)?;
            db.close().map_err(fail)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Delete { key: k, .. } => {
            let k = key(k)?;
            let db = open(cli, "delete", Access::Write)?;
            keyspace(cli, &db)?.delete(&k).map_err(fail)?;
            db.close().map_err(fail)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Scan { from, to, prefix, limit, reverse, no_value, .. } => {
            let from = from.as_deref().map(key).transpose()?;
            let to = to.as_deref().map(key).transpose()?;
            let prefix = prefix.as_deref().map(key).transpose()?;
            let db = open_values(cli, "scan")?;
            let ks = tree(cli, &db)?;
            scan(&ks, (from, to), prefix, limit.unwrap_or(usize::MAX), (*reverse, *no_value), hex)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Load { csv, batch, .. } => {
            let db = open(cli, "load", Access::Write)?;
            let ks = keyspace(cli, &db)?;
            let n = load(&db, &ks, *csv, (*batch).max(1), hex)?;
            db.close().map_err(fail)?;
            println!("{n}");
            Ok(ExitCode::SUCCESS)
        }
        Command::WriteSst { file, csv, .. } => {
            let mut w = SstFileWriter::create(file, &strata::Options::default()).map_err(fail)?;
            let mut n = 0u64;
            read_pairs(*csv, hex, |k, v| {
                w.put(k, v).map_err(fail)?;
                n += 1;
                Ok(())
            })?;
            let info = w.finish().map_err(fail)?;
            println!("{n} entries, {} bytes", info.file_size);
            Ok(ExitCode::SUCCESS)
        }
        Command::Ingest { files, move_files, no_blocking_flush, .. } => {
            let db = open(cli, "ingest", Access::Write)?;
            let opts = IngestExternalFileOptions::default()
                .with_move_files(*move_files)
                .with_allow_blocking_flush(!*no_blocking_flush);
            keyspace(cli, &db)?.ingest_external_file(files, &opts).map_err(fail)?;
            db.close().map_err(fail)?;
            Ok(ExitCode::SUCCESS)
        }
        _ => Err("not a key-value command".into()),
    }
}

/// One item of a scan.
type KvResult = strata::Result<(Vec<u8>, Vec<u8>)>;

/// `get` on a keyspace of stamped values: the value without its stamp; an
/// expired one (not compacted away yet) is reported as such, with its age.
fn get_ttl(ks: &strata::ttl::TtlKeyspace, k: &[u8], hex: bool) -> CliResult<ExitCode> {
    match ks.get_with_write_time(k).map_err(|e| e.to_string())? {
        Some(s) if !s.expired => {
            println!("{}", show_value(&s.value, None, hex));
            Ok(ExitCode::SUCCESS)
        }
        Some(s) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            Err(format!(
                "key {} not found: its value expired (written {} s ago, keyspace {:?} has a TTL of {:?})",
                show(k, hex),
                now.saturating_sub(s.written_millis) / 1000,
                ks.name(),
                ks.ttl()
            ))
        }
        None => Err(format!("key {} not found", show(k, hex))),
    }
}

fn scan(
    ks: &Tree,
    (from, to): (Option<Vec<u8>>, Option<Vec<u8>>),
    prefix: Option<Vec<u8>>,
    limit: usize,
    (reverse, no_value): (bool, bool),
    hex: bool,
) -> CliResult<()> {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    let lo = from.map_or(Unbounded, Included);
    let hi = to.map_or(Unbounded, Excluded);
    // A TTL keyspace has no prefix iterator: the range of the prefix's keys.
    let it: Box<dyn DoubleEndedIterator<Item = KvResult>> = match (ks, &prefix) {
        (Tree::Plain(ks), Some(p)) => Box::new(ks.prefix_iterator(p)),
        (Tree::Plain(ks), None) => Box::new(ks.range::<Vec<u8>, _>((lo.clone(), hi.clone()))),
        (Tree::Ttl(ks), Some(p)) => {
            let end = strata::prefix_successor(p).map_or(Unbounded, Excluded);
            Box::new(ks.range::<Vec<u8>, _>((Included(p.clone()), end)))
        }
        (Tree::Ttl(ks), None) => Box::new(ks.range::<Vec<u8>, _>((lo.clone(), hi.clone()))),
    };
    let in_range = |k: &[u8]| {
        let above = match &lo {
            Included(f) => k >= f.as_slice(),
            _ => true,
        };
        let below = match &hi {
            Excluded(t) => k < t.as_slice(),
            _ => true,
        };
        above && below
    };
    let unavailable = match ks {
        Tree::Plain(ks) => unavailable_merge_operator(ks),
        Tree::Ttl(_) => None,
    };
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let mut n = 0;
    let mut each = |kv: strata::Result<(Vec<u8>, Vec<u8>)>| -> CliResult<bool> {
        if n == limit {
            return Ok(false);
        }
        let (k, v) = kv.map_err(|e| e.to_string())?;
        // A prefix scan with --from/--to: the range narrows the prefix.
        if prefix.is_none() || in_range(&k) {
            if no_value {
                writeln!(out, "{}", show(&k, hex))
            } else {
                writeln!(out, "{}\t{}", show(&k, hex), show_value(&v, unavailable.as_deref(), hex))
            }
            .map_err(|e| e.to_string())?;
            n += 1;
        }
        Ok(true)
    };
    if reverse {
        for kv in it.rev() {
            if !each(kv)? {
                break;
            }
        }
    } else {
        for kv in it {
            if !each(kv)? {
                break;
            }
        }
    }
    out.flush().map_err(|e| e.to_string())
}

/// Splits one CSV line into its two fields; double-quoted fields may hold
/// commas and `""` for a quote.
fn csv_fields(line: &str) -> Option<(String, String)> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' if quoted => quoted = false,
            '"' if cur.is_empty() => quoted = true,
            ',' if !quoted => fields.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    if quoted {
        return None;
    }
    fields.push(cur);
    let mut f = fields.into_iter();
    match (f.next(), f.next(), f.next()) {
        (Some(k), Some(v), None) => Some((k, v)),
        _ => None,
    }
}

fn load(db: &strata::Db, ks: &Keyspace, csv: bool, batch_len: usize, hex: bool) -> CliResult<u64> {
    let progress = Progress::new("load", None);
    let mut batch = WriteBatch::new();
    let mut n = 0u64;
    let flush = |batch: &mut WriteBatch| -> CliResult<()> {
        if !batch.is_empty() {
            db.write(std::mem::take(batch)).map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    read_pairs(csv, hex, |k, v| {
        batch.put_cf(ks, k, v);
        n += 1;
        if batch.len() >= batch_len {
            flush(&mut batch)?;
            progress.set(n);
        }
        Ok(())
    })?;
    flush(&mut batch)?;
    progress.finish(n);
    Ok(n)
}

/// Calls `each(key, value)` for every `key<TAB>value` (or CSV) line of
/// stdin; a malformed line fails with its number.
fn read_pairs(
    csv: bool,
    hex: bool,
    mut each: impl FnMut(Vec<u8>, Vec<u8>) -> CliResult<()>,
) -> CliResult<()> {
    let stdin = std::io::stdin();
    for (i, line) in stdin.lock().lines().enumerate() {
        let line = line.map_err(|e| format!("stdin: {e}"))?;
        let line = line.strip_suffix('\r').unwrap_or(&line);
        if line.is_empty() {
            continue;
        }
        let (k, v) = if csv {
            csv_fields(line).ok_or_else(|| format!("line {}: expected two CSV columns", i + 1))?
        } else {
            let (k, v) =
                line.split_once('\t').ok_or_else(|| format!("line {}: expected key<TAB>value", i + 1))?;
            (k.to_string(), v.to_string())
        };
        let k = parse(&k, hex).map_err(|e| format!("line {}: {e}", i + 1))?;
        let v = parse(&v, hex).map_err(|e| format!("line {}: {e}", i + 1))?;
        each(k, v).map_err(|e| format!("line {}: {e}", i + 1))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::csv_fields;

    #[test]
    fn csv_fields_handle_quotes() {
        assert_eq!(csv_fields("a,b"), Some(("a".into(), "b".into())));
        assert_eq!(csv_fields("\"a,1\",\"say \"\"hi\"\"\""), Some(("a,1".into(), "say \"hi\"".into())));
        assert_eq!(csv_fields("a,b,c"), None);
        assert_eq!(csv_fields("a"), None);
        assert_eq!(csv_fields("\"a,b"), None);
    }
}
