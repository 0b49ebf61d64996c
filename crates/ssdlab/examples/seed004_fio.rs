//! Seed 004 Fig. 5 (no internal cache): the 64-channel MLC SSD under fio with 1 MiB requests,
//! posixaio, iodepth 256 and 1 GiB (Table 3), sequential read and write, on PCIe 3.0 x4 and on
//! an ideal link. The read on the ideal link is the figure the preset's one host cost was
//! fitted to (calibrated); the others are predictions.
//! Prints ssdlab's bandwidth beside the seed's NVMe-ideal figures.
//!
//! cargo run --release -p ssdlab --example seed004_fio

use ssdlab::{run, JobSpec, RunOptions, SsdConfig};

fn main() {
    // Seed 004, section 5.2: NVMe-ideal reaches 2370 MiB/s sequential read, 353 MiB/s write.
    let paper = [("read", 2370.0), ("write", 353.0)];
    println!(
        "{:<10} {:<6} {:>12} {:>12} {:>10}",
        "link", "rw", "ssdlab MiB/s", "seed MiB/s", "diff"
    );
    for link in ["pcie3x4", "ideal"] {
        for (rw, seed_mib) in paper {
            // Reads need written data: fill the drive first (untimed).
            let mut overrides = vec![format!("interface.link=\"{link}\"")];
            if rw == "read" {
                overrides.push("precondition.fill=\"sequential\"".into());
            }
            let cfg = SsdConfig::resolve("seed004-64ch-mlc", &overrides).expect("preset");
            let job = JobSpec::from_toml_str(
                &format!("name = \"seed004-fig5\"\nrw = \"{rw}\"\nbs = \"1MiB\"\niodepth = 256\nioengine = \"posixaio\"\nsize = \"1GiB\""),
                "fig5",
            )
            .expect("job");
            let out = run(&cfg, &job, &RunOptions::seeded(1), &mut |_, _| true).expect("run");
            let bw = out.result.total.bandwidth_mib_s;
            let shown = if link == "ideal" {
                format!("{seed_mib:.0}")
            } else {
                "-".into()
            };
            let diff = if link == "ideal" {
                format!("{:+.0}%", (bw / seed_mib - 1.0) * 100.0)
            } else {
                "-".into()
            };
            println!("{link:<10} {rw:<6} {bw:>12.1} {shown:>12} {diff:>10}");
            eprintln!(
                "  [{link} {rw}] sim {:.3}s, WAF {:.2}, channel util {:.2}, die util {:.2}, link up {:.2} down {:.2}, host cpu {:.2}, wall {:.1}s",
                out.result.sim.simulated_time_s,
                out.result.device.write_amplification,
                out.result.utilisation.channel.mean,
                out.result.utilisation.die.mean,
                out.result.utilisation.link_up,
                out.result.utilisation.link_down,
                out.result.utilisation.host_cpu,
                out.result.wall.seconds + out.result.wall.precondition_seconds
            );
        }
    }
}
