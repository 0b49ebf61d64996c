//! The benchmark without Python: `cargo run --release -p ssdlab --example bench [IO_COUNT]`,
//! the same runs and figures as `ssdlab bench` (seed 1, preconditioned to the steady state with
//! no random overwrites beyond it).
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let v = ssdlab::bench(n, 1, 0.0).expect("bench");
    println!("{}", serde_json::to_string_pretty(&v).unwrap());
}
