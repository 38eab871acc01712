//! `strata-bench` command line.
fn main() {
    println!("strata-bench: under construction");
}
