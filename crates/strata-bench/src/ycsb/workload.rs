//! The six YCSB core workloads: operation mix and request distribution, as
//! in YCSB's `workloads/workloada`..`workloadf` files.

/// One of YCSB's core workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// 50% reads, 50% updates, zipfian keys (update heavy).
    A,
    /// 95% reads, 5% updates, zipfian keys (read mostly).
    B,
    /// 100% reads, zipfian keys (read only).
    C,
    /// 95% reads, 5% inserts, reads favour the latest inserts.
    D,
    /// 95% scans (start zipfian, length uniform 1..=100), 5% inserts.
    E,
    /// 50% reads, 50% read-modify-writes, zipfian keys.
    F,
}

/// Operation proportions of a workload (they sum to 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Mix {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub rmw: f64,
}

/// The operation kinds, in the order of [`OP_NAMES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Read = 0,
    Update = 1,
    Insert = 2,
    Scan = 3,
    ReadModifyWrite = 4,
}

/// YCSB's names for the operation kinds, as its reports print them.
pub const OP_NAMES: [&str; 5] = ["READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE"];

impl Workload {
    /// All six, in order.
    pub const ALL: [Workload; 6] =
        [Workload::A, Workload::B, Workload::C, Workload::D, Workload::E, Workload::F];

    /// Parses `a`..`f`, `ycsba`, `ycsb-a`, `workloada` (any case).
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        let letter =
            t.trim_start_matches("workload").trim_start_matches("ycsb").trim_start_matches(['-', '_']);
        match letter {
            "a" => Ok(Workload::A),
            "b" => Ok(Workload::B),
            "c" => Ok(Workload::C),
            "d" => Ok(Workload::D),
            "e" => Ok(Workload::E),
            "f" => Ok(Workload::F),
            _ => Err(format!("unknown YCSB workload {s:?}; valid: a, b, c, d, e, f (or ycsba..ycsbf)")),
        }
    }

    /// The benchmark name used in reports: `ycsb-a`..`ycsb-f`.
    pub fn name(&self) -> &'static str {
        match self {
            Workload::A => "ycsb-a",
            Workload::B => "ycsb-b",
            Workload::C => "ycsb-c",
            Workload::D => "ycsb-d",
            Workload::E => "ycsb-e",
            Workload::F => "ycsb-f",
        }
    }

    pub(crate) fn mix(&self) -> Mix {
        let m = |read, update, insert, scan, rmw| Mix { read, update, insert, scan, rmw };
        match self {
            Workload::A => m(0.5, 0.5, 0.0, 0.0, 0.0),
            Workload::B => m(0.95, 0.05, 0.0, 0.0, 0.0),
            Workload::C => m(1.0, 0.0, 0.0, 0.0, 0.0),
            Workload::D => m(0.95, 0.0, 0.05, 0.0, 0.0),
            Workload::E => m(0.0, 0.0, 0.05, 0.95, 0.0),
            Workload::F => m(0.5, 0.0, 0.0, 0.0, 0.5),
        }
    }

    /// Workload D draws keys with YCSB's `latest` distribution; the others
    /// with its (scrambled) `zipfian`.
    pub(crate) fn uses_latest(&self) -> bool {
        matches!(self, Workload::D)
    }
}

impl Mix {
    /// Picks an operation from a uniform draw `u` in `[0, 1)`, like YCSB's
    /// `DiscreteGenerator`.
    pub(crate) fn pick(&self, u: f64) -> Op {
        let steps = [
            (self.read, Op::Read),
            (self.update, Op::Update),
            (self.insert, Op::Insert),
            (self.scan, Op::Scan),
            (self.rmw, Op::ReadModifyWrite),
        ];
        let mut acc = 0.0;
        let mut last = Op::Read;
        for (p, op) in steps {
            if p <= 0.0 {
                continue;
            }
            acc += p;
            last = op;
            if u < acc {
                return op;
            }
        }
        last
    }
}
