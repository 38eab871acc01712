//! The LWC-tree slides (light-weight compaction, LWC-store on SMR drives):
//! random and sequential loads, reads after the load, overall compaction
//! time and the write amplifications (WA, AWA, MWA) over band sizes, with
//! LevelDB on a shingled drive (LDB-SMR), on a conventional one (LDB-HDD),
//! SMRDB and LWC-store on a shingled one. The drives are SIMULATED
//! (`--drive_model`, crate::smr): the claims compare what the modelled
//! drive would do with each engine's I/O, never wall-clock speed.

use super::spec::{side, Chart, Claim, Experiment, Metric, Paper, PaperValue, Scale};

/// LevelDB on the shingled drive: Strata's leveled policy.
const LDB_SMR: &str = "strata/leveled";
/// LevelDB on a conventional drive.
const LDB_HDD: &str = "strata/leveled:hdd";
/// SMRDB: two levels of band-sized tables (`--policy=smrdb`).
const SMRDB: &str = "strata/smrdb";
/// LWC-store on the shingled drive.
const LWC_SMR: &str = "strata/lwc";

/// Sizes of one scale: entries, value bytes, the shape flags, the band MiB
/// standing for the slides' 40 MB, and reads after the load.
struct Size {
    num: u64,
    value: usize,
    shape: &'static str,
    band_mib: f64,
    reads: u64,
    /// Band sizes standing for the slides' 20, 40 and 60 MB.
    sweep: [f64; 3],
}

fn size(scale: Scale) -> Size {
    scale.pick(
        Size {
            num: 3_000,
            value: 100,
            // A block cache smaller than the data: reads it answers cost the drive nothing.
            shape: "--write_buffer_size=65536 --max_file_size=65536 --max_bytes_for_level_base=262144 \
                    --cache_size=65536",
            band_mib: 1.0,
            reads: 3_000,
            sweep: [1.0, 1.5, 2.0],
        },
        Size {
            num: 100_000,
            value: 1000,
            shape: "--write_buffer_size=1048576 --max_file_size=524288 --max_bytes_for_level_base=2621440",
            band_mib: 10.0,
            reads: 5_000,
            sweep: [5.0, 10.0, 15.0],
        },
        Size {
            num: 2_000_000,
            value: 1000,
            shape: "--write_buffer_size=4194304 --max_file_size=2097152 --max_bytes_for_level_base=10485760",
            band_mib: 40.0,
            reads: 20_000,
            sweep: [20.0, 40.0, 60.0],
        },
    )
}

/// A claim as a table row: figure, the slides' claim, their ratio, the
/// metric, the benchmark, the row it is of and the row it is over.
type Row = (&'static str, &'static str, f64, Metric, &'static str, &'static str, &'static str);

/// The benchmark whose figures cover the whole load.
const WAIT: &str = "waitforcompaction";

/// The random load's claims (slides 18, 19, 21 and 22).
const LOAD_CLAIMS: [Row; 12] = [
    (
        "Slide 18",
        "random load: LWC-SMR 9.80x LDB-SMR (9.8 against 1.0 MB/s)",
        9.8,
        Metric::DriveLoadMbPerSec,
        WAIT,
        LWC_SMR,
        LDB_SMR,
    ),
    (
        "Slide 18",
        "random load: LWC-SMR 4.67x LDB-HDD (9.8 against 2.1 MB/s)",
        4.67,
        Metric::DriveLoadMbPerSec,
        WAIT,
        LWC_SMR,
        LDB_HDD,
    ),
    (
        "Slide 18",
        "random load: LWC-SMR 5.76x SMRDB (9.8 against 1.7 MB/s)",
        5.76,
        Metric::DriveLoadMbPerSec,
        WAIT,
        LWC_SMR,
        SMRDB,
    ),
    (
        "Slide 18",
        "random load: LDB-HDD 2.1x LDB-SMR (the drive's own cost)",
        2.1,
        Metric::DriveLoadMbPerSec,
        WAIT,
        LDB_HDD,
        LDB_SMR,
    ),
    (
        "Slide 21",
        "overall compaction time: LWC-SMR 0.14x LDB-SMR (5 128 against 35 640 s)",
        5128.0 / 35640.0,
        Metric::DriveBusySecs,
        WAIT,
        LWC_SMR,
        LDB_SMR,
    ),
    (
        "Slide 21",
        "overall compaction time: LWC-SMR 0.27x LDB-HDD (5 128 against 19 227 s)",
        5128.0 / 19227.0,
        Metric::DriveBusySecs,
        WAIT,
        LWC_SMR,
        LDB_HDD,
    ),
    (
        "Slide 21",
        "overall compaction time: LWC-SMR 0.10x SMRDB (5 128 against 49 298 s)",
        5128.0 / 49298.0,
        Metric::DriveBusySecs,
        WAIT,
        LWC_SMR,
        SMRDB,
    ),
    (
        "Slides 14, 22",
        "auxiliary write amplification at 40 MB bands: LDB-SMR 5.38, LWC-SMR 1.14",
        5.38 / 1.14,
        Metric::Awa,
        WAIT,
        LDB_SMR,
        LWC_SMR,
    ),
    (
        "Slide 22",
        "the store's write amplification at 40 MB bands: LWC-SMR 1.47 against LDB-SMR 9.83",
        1.47 / 9.83,
        Metric::WriteAmp,
        WAIT,
        LWC_SMR,
        LDB_SMR,
    ),
    (
        "Slides 14, 22",
        "multiplicative write amplification at 40 MB bands: LWC-SMR 1.68 against LDB-SMR 52.85",
        1.68 / 52.85,
        Metric::Mwa,
        WAIT,
        LWC_SMR,
        LDB_SMR,
    ),
    (
        "Slide 19",
        "random get latency after the load: LWC-SMR 28.65 ms against LDB-SMR 30.58 ms",
        28.65 / 30.58,
        Metric::DriveMsPerOp,
        "readrandom",
        LWC_SMR,
        LDB_SMR,
    ),
    (
        "Slide 19",
        "sequential get throughput: LWC-SMR 26.9 against LDB-SMR 15.5 MB/s",
        26.9 / 15.5,
        Metric::DriveOpsPerSec,
        "readseq",
        LWC_SMR,
        LDB_SMR,
    ),
];

/// The sequential load's claims (slide 18).
const SEQ_LOAD_CLAIMS: [Row; 3] = [
    (
        "Slide 18",
        "sequential load: LWC-SMR 1.06x LDB-HDD (45.5 against 42.9 MB/s)",
        45.5 / 42.9,
        Metric::DriveLoadMbPerSec,
        WAIT,
        LWC_SMR,
        LDB_HDD,
    ),
    (
        "Slide 18",
        "sequential load: LWC-SMR 1.01x SMRDB (45.5 against 45.0 MB/s)",
        45.5 / 45.0,
        Metric::DriveLoadMbPerSec,
        WAIT,
        LWC_SMR,
        SMRDB,
    ),
    (
        "Slide 18",
        "sequential load: LWC-SMR 3.73x LDB-SMR (45.5 against 12.2 MB/s)",
        45.5 / 12.2,
        Metric::DriveLoadMbPerSec,
        WAIT,
        LWC_SMR,
        LDB_SMR,
    ),
];

fn table(rows: &[Row]) -> Vec<Claim> {
    rows.iter()
        .map(|&(figure, text, paper, metric, benchmark, of, over)| {
            claim(figure, text, paper, metric, benchmark, of, over)
        })
        .collect()
}

fn claim(
    figure: &'static str,
    text: &str,
    paper: f64,
    metric: Metric,
    benchmark: &str,
    of: &str,
    over: &str,
) -> Claim {
    Claim {
        figure,
        text: text.to_string(),
        paper: PaperValue::Ratio(paper),
        of: side(benchmark, of),
        over: side(benchmark, over),
        metric,
    }
}

/// What every experiment's conditions say about the drive model.
fn drive_conditions(z: &Size) -> String {
    format!(
        "The drives are SIMULATED (`--drive_model`): the engine runs on this machine's disk, and a \
         model under its file system sees every write and read and counts what a 5 900 rpm drive \
         would do (12 ms per seek, 150 MB/s). `smr` is drive-managed like the slides' ST5000AS0011: \
         bands of {} MiB written only at their write pointer, writes behind it go to a persistent \
         cache (a fifth of the data written, as the drive's ~20 GB is of the slides' 100 GB), and a \
         full cache is cleaned by reading and rewriting every band it holds data for. LevelDB's \
         files are placed by a file system's first-fit allocator that reuses freed space (fs \
         placement); SMRDB's and LWC-store's tables each own bands, appended at their write \
         pointer and reset when freed (band placement), as both stores lay out their tables; an \
         `lwc` table grows by appends to one band before it is divided (its target is a quarter \
         band), as LWC-store's DTables do. MWA is the engine's write amplification (flushes and \
         compactions) times the drive's AWA, as the slides multiply them. A \
         page cache of a tenth of the data answers recent reads. Speeds are user bytes (or \
         operations) per second the drive was busy: the load's speed when the drive is the \
         bottleneck, as on the slides' disks; the engines' CPU time is not in them. `leveled` \
         stands for LevelDB (Strata's leveled policy), `smrdb` is SMRDB's shape of Strata's \
         tiered policy (two levels of overlapping runs, tables a band large; SMRDB's own merge \
         choices are not in the slides).",
        z.band_mib
    )
}

/// Flags of a run of the four rows (LDB-SMR, LDB-HDD, SMRDB, LWC-SMR) at
/// `z`'s size, then `rest`.
fn four_rows(z: &Size, rest: &str) -> String {
    format!(
        "--engines=strata --policy=leveled,leveled:hdd,smrdb,lwc --drive_model=smr \
         --smr_band_size={} --baseline={LDB_SMR} --num={} --key_size=16 --value_size={} {} {rest}",
        (z.band_mib * (1u64 << 20) as f64) as u64,
        z.num,
        z.value,
        z.shape
    )
}

fn loads(scale: Scale) -> Experiment {
    let z = size(scale);
    let flags = four_rows(
        &z,
        &format!("--reads={} --benchmarks=fillrandom,waitforcompaction,readrandom,readseq", z.reads),
    );
    Experiment {
        id: "load",
        title: "Slides 18, 19, 21 and 22: random load, reads after it, compaction time, AWA and MWA",
        conditions: format!(
            "{} entries of 16 B keys and {} B values loaded in random order by one thread (the \
             slides: 100 GB; 40 GB for the compaction time), then the compactions left are waited \
             for, then {} random and {} sequential reads (the slides: 100 K each). Tables are a \
             twentieth of a band, as the slides' LevelDB's 2 MB of 40 MB. `waitforcompaction`'s \
             figures cover the whole load from open; the read rows cover their own reads. {}",
            z.num,
            z.value,
            z.reads,
            z.reads,
            drive_conditions(&z)
        ),
        flags,
        steps: Vec::new(),
        claims: table(&LOAD_CLAIMS),
        chart: Chart { benchmarks: vec!["fillrandom", WAIT], metric: Metric::DriveLoadMbPerSec, over: None },
    }
}

fn seq_load(scale: Scale) -> Experiment {
    let z = size(scale);
    let flags = four_rows(&z, "--benchmarks=fillseq,waitforcompaction");
    Experiment {
        id: "seqload",
        title: "Slide 18: sequential load",
        conditions: format!(
            "The random load's sizes, keys written in order: no compaction rewrites anything (the \
             slides: \"no compaction, similar sequential load performance\"). {}",
            drive_conditions(&z)
        ),
        flags,
        steps: Vec::new(),
        claims: table(&SEQ_LOAD_CLAIMS),
        chart: Chart { benchmarks: vec!["fillseq", WAIT], metric: Metric::DriveLoadMbPerSec, over: None },
    }
}

/// Slide 22's MWA of LWC-SMR against LDB-SMR at each band of `sweep`
/// (standing for 20, 40 and 60 MB).
fn mwa_claims(sweep: &[f64; 3]) -> impl Iterator<Item = Claim> + '_ {
    const SLIDE: [(&str, f64, f64); 3] = [("20", 2.28, 25.22), ("40", 1.68, 52.85), ("60", 1.63, 76.59)];
    SLIDE.iter().zip(sweep).map(|(&(mb, lwc, ldb), band)| {
        claim(
            "Slide 22",
            &format!("MWA at {mb} MB bands: LWC-SMR {lwc} against LDB-SMR {ldb}"),
            lwc / ldb,
            Metric::Mwa,
            WAIT,
            &format!("strata/lwc:smr@{band}"),
            &format!("strata/leveled:smr@{band}"),
        )
    })
}

fn bands(scale: Scale) -> Experiment {
    let z = size(scale);
    let [small, mid, large] = z.sweep;
    let rows: Vec<String> =
        ["leveled", "lwc"].iter().flat_map(|p| z.sweep.iter().map(move |b| format!("{p}:smr@{b}"))).collect();
    let flags = format!(
        "--engines=strata --policy={} --drive_model=smr --num={} --key_size=16 --value_size={} {} \
         --benchmarks=fillrandom,waitforcompaction",
        rows.join(","),
        z.num,
        z.value,
        z.shape
    );
    let row = |p: &str, b: f64| format!("strata/{p}:smr@{b}");
    let mwa = Metric::Mwa;
    let awa = Metric::Awa;
    Experiment {
        id: "bands",
        title: "Slide 22: write amplification (WA, AWA, MWA) over band sizes",
        conditions: format!(
            "The random load at band sizes of {small}, {mid} and {large} MiB, standing for the \
             slides' 20, 40 and 60 MB (10, 20 and 30 tables a band, as there). The bars are each \
             row's MWA; the table's `waitforcompaction` column gives the values. {}",
            drive_conditions(&z)
        ),
        flags,
        steps: Vec::new(),
        claims: mwa_claims(&z.sweep)
            .chain([
                claim(
                    "Slide 22",
                    "LDB-SMR's AWA grows with the band: 7.77 at 60 MB against 2.59 at 20 MB",
                    7.77 / 2.59,
                    awa,
                    WAIT,
                    &row("leveled", large),
                    &row("leveled", small),
                ),
                claim(
                    "Slide 22",
                    "LWC-SMR's AWA stays near 1 whatever the band (1.02 at 20 MB, 1.17 at 60 MB): about the same",
                    1.0,
                    awa,
                    WAIT,
                    &row("lwc", large),
                    &row("lwc", small),
                ),
            ])
            .collect(),
        chart: Chart { benchmarks: vec![WAIT], metric: mwa, over: None },
    }
}

/// The LWC slides' report.
pub fn paper(scale: Scale) -> Paper {
    Paper {
        name: "lwc",
        title: "LWC-tree (light-weight compaction, LWC-store on SMR drives): the slides' claims against Strata",
        paper_setup: "LevelDB and LWC-store on a Seagate ST5000AS0011 drive-managed SMR drive and an \
                      ST1000DM003 conventional disk, 16 Xeon E5-2660 cores, 100 GB loads (40 GB for \
                      compaction time), 40 MB bands unless swept (from the slides; the numbers are \
                      read off their charts)",
        experiments: vec![loads(scale), seq_load(scale), bands(scale)],
        not_run: vec![
            ("Slide 23", "LWC-store on an HDD and an SSD: shown without numbers on the slides; `scripts/lwc-load.sh` runs leveled against lwc on this machine's disk (docs/BENCHMARKS.md, \"Light-weight compaction\")."),
            ("Real drives", "no SMR drive here: every drive figure comes from the simulated drive, whose model is stated in each experiment's conditions."),
            ("Sizes", "100 GB loads exceed this machine's time; the conditions state the scale."),
        ],
    }
}
