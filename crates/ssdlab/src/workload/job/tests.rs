#[test]
fn a_bad_block_size_says_what_is_wrong_with_it() {
    let e = super::JobSpec::from_json(r#"{"rw":"randread","bs":"3KiBx"}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("field `bs`") && e.contains("3KiBx"), "{e}");
    assert!(!e.contains("untagged"), "{e}");
    let e = super::JobSpec::from_json(r#"{"rw":"randread","bs":true}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected a size such as 4096"), "{e}");
    // Both forms still read.
    for bs in [r#""4KiB""#, "4096", r#"{"4KiB":70,"64KiB":30}"#] {
        super::JobSpec::from_json(&format!(r#"{{"rw":"randread","bs":{bs}}}"#)).unwrap();
    }
}

use super::*;

#[test]
fn a_name_given_as_a_number_or_null_says_which_names_the_field_takes() {
    for (json, got) in [(r#"{"rw": 5}"#, "got 5"), (r#"{"rw": null}"#, "got null")] {
        let e = JobSpec::from_json(json).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("job, field `rw`: {got}, expected one of `read`")),
            "{e}"
        );
    }
}

#[test]
fn fields_are_the_serialised_fields_in_order() {
    let spec = JobSpec::from_json(r#"{"rw":"read","bs":"4KiB"}"#).unwrap();
    let text = serde_json::to_string(&spec).unwrap();
    let mut at = 0;
    for f in JobSpec::FIELDS {
        let key = format!("\"{f}\":");
        let i = text[at..]
            .find(&key)
            .unwrap_or_else(|| panic!("{f} missing or out of order in {text}"));
        at += i + key.len();
    }
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v.as_object().unwrap().len(), JobSpec::FIELDS.len());
}

fn spec(text: &str) -> JobSpec {
    JobSpec::from_toml_str(text, "test").unwrap()
}

#[test]
fn sequential_walks_and_random_stays_inside() {
    let job = spec("rw = \"write\"\nbs = \"4KiB\"\nsize = \"64KiB\"")
        .fit(1 << 30)
        .unwrap();
    let mut g = Generator::new(&job, 0, 1);
    let offs: Vec<u64> = (0..20).map(|_| g.next(&job).1).collect();
    assert_eq!(&offs[..4], &[0, 4096, 8192, 12288]);
    assert_eq!(offs[16], 0, "wraps at the region end");
    let job = spec("rw = \"randread\"\nbs = { \"4KiB\" = 1, \"16KiB\" = 1 }\noffset = \"1MiB\"\nsize = \"1MiB\"\ndistribution = \"zipf:1.1\"")
        .fit(1 << 30)
        .unwrap();
    let mut g = Generator::new(&job, 0, 1);
    for _ in 0..10_000 {
        let (_, off, len) = g.next(&job);
        assert!(off >= 1 << 20 && off + len <= 2 << 20 && off % 4096 == 0);
    }
}

/// fio's zoned distributions, against the shares asked for: 20,000 draws, each zone's
/// share of them within 1.5 points (the binomial's standard deviation is 0.35 points).
#[test]
fn zoned_distributions_send_each_zone_its_share() {
    for (dist, zones) in [
        // 60 % of accesses to the first 10 % of the 1 MiB region, 30 % to the next 20 %, 10 %
        // to the rest.
        (
            "zoned:60/10:30/20:10/70",
            [
                (0u64, 104_857u64, 60.0),
                (104_857, 314_572, 30.0),
                (314_572, 1 << 20, 10.0),
            ],
        ),
        (
            "zoned_abs:50/64KiB:25/64KiB:25/896KiB",
            [
                (0, 65_536, 50.0),
                (65_536, 131_072, 25.0),
                (131_072, 1 << 20, 25.0),
            ],
        ),
    ] {
        let job = spec(&format!(
            "rw = \"randread\"\nbs = \"4KiB\"\noffset = \"1MiB\"\nsize = \"1MiB\"\ndistribution = \"{dist}\""
        ))
        .fit(1 << 30)
        .unwrap();
        let mut g = Generator::new(&job, 0, 7);
        let n = 20_000;
        let mut hits = [0u32; 3];
        for _ in 0..n {
            let (_, off, len) = g.next(&job);
            let rel = off - (1 << 20);
            assert!(rel + len <= 1 << 20 && off % 4096 == 0, "{dist}: {off}");
            let z = zones
                .iter()
                .position(|&(a, b, _)| rel >= a / 4096 * 4096 && rel < b)
                .unwrap();
            hits[z] += 1;
        }
        for (z, &(_, _, want)) in zones.iter().enumerate() {
            let got = 100.0 * hits[z] as f64 / n as f64;
            assert!(
                (got - want).abs() < 1.5,
                "{dist}: zone {z}: {got:.2} % of accesses, expected {want}"
            );
        }
    }
    for (bad, says) in [
        ("zoned:60/10:30/20", "add up to 90, not 100"),
        ("zoned:50/60:50/60", "above 100"),
        ("zoned:50/10:x/90", "not a whole percentage"),
        ("zoned_abs:50/1GiB:50/1GiB", "past the job's region"),
    ] {
        let text = match JobSpec::from_toml_str(
            &format!("rw = \"randread\"\nsize = \"1MiB\"\ndistribution = \"{bad}\""),
            "j.toml",
        ) {
            Err(e) => e.to_string(),
            Ok(s) => s.fit(1 << 40).unwrap_err().to_string(),
        };
        assert!(
            text.contains("distribution") && text.contains(says),
            "{bad}: {text}"
        );
    }
}

/// fio's percentage_random: 0 makes a random pattern sequential (each request after the
/// previous one); 50 about half.
#[test]
fn percentage_random_continues_after_the_previous_request() {
    for (pct, low, high) in [(0u32, 999, 999), (50, 450, 550), (100, 0, 10)] {
        let job = spec(&format!(
            "rw = \"randread\"\nbs = \"4KiB\"\nsize = \"64MiB\"\npercentage_random = {pct}"
        ))
        .fit(1 << 30)
        .unwrap();
        let mut g = Generator::new(&job, 0, 3);
        let mut prev_end = None;
        let mut follow = 0;
        for _ in 0..1000 {
            let (_, off, len) = g.next(&job);
            if prev_end == Some(off) {
                follow += 1;
            }
            prev_end = Some(off + len);
        }
        assert!(
            (low..=high).contains(&follow),
            "percentage_random={pct}: {follow} of 999 followed on"
        );
    }
    let e = JobSpec::from_json(r#"{"rw":"randread","percentage_random":101}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("field `percentage_random`: got 101"), "{e}");
}

/// fio's pareto:h sends h of the accesses to 1 − h of the blocks (its ranks, before they
/// are scattered), and normal:dev is a bell around the middle rank with a standard
/// deviation of about a twelfth of the slots, widened by dev % of them.
#[test]
fn pareto_and_normal_ranks_have_fios_shapes() {
    fn ranks(dist: &str, n: usize) -> (Vec<u64>, u64) {
        let job = spec(&format!(
            "rw = \"randread\"\nsize = \"64MiB\"\ndistribution = \"{dist}\""
        ))
        .fit(1 << 30)
        .unwrap();
        let all = job.region_len / job.min_bs;
        let mut g = Generator::new(&job, 0, 7);
        ((0..n).map(|_| g.skew_rank(all)).collect(), all)
    }
    let (r, all) = ranks("pareto:0.8", 200_000);
    let hot = r
        .iter()
        .filter(|&&x| x as f64 >= 0.8 * (all - 1) as f64)
        .count();
    let share = hot as f64 / r.len() as f64;
    assert!((share - 0.8).abs() < 0.01, "{share}");
    let (r, all) = ranks("pareto:0.9", 200_000);
    let hot = r
        .iter()
        .filter(|&&x| x as f64 >= 0.9 * (all - 1) as f64)
        .count();
    assert!((hot as f64 / r.len() as f64 - 0.9).abs() < 0.01);
    let stats = |r: &[u64]| {
        let n = r.len() as f64;
        let mean = r.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = r.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        (mean, var.sqrt())
    };
    let (r, all) = ranks("normal:0", 100_000);
    let (mean, sd) = stats(&r);
    let n = all as f64;
    assert!((mean / n - 0.5).abs() < 0.005, "{mean}");
    // 12 uniforms on [0, all] averaged: sd = all / sqrt(12) / sqrt(12) = all / 12.
    assert!((sd / (n / 12.0) - 1.0).abs() < 0.03, "{sd}");
    let (r, _) = ranks("normal:30", 100_000);
    let (_, sd30) = stats(&r);
    // Plus a uniform deviation 0.3 × all wide: its variance (0.3 all)² / 12 adds.
    let want = ((n / 12.0).powi(2) + (0.3 * n).powi(2) / 12.0).sqrt();
    assert!((sd30 / want - 1.0).abs() < 0.03, "{sd30} vs {want}");
    let e = JobSpec::from_json(r#"{"rw":"randread","distribution":"pareto:1"}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("pareto:<h>\" with 0 < h < 1"), "{e}");
    let e = JobSpec::from_json(r#"{"rw":"randread","distribution":"normal:100"}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("normal:<dev>"), "{e}");
    let e = JobSpec::from_json(r#"{"rw":"randread","rate_process":"poisson"}"#)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("field `rate_process`: given without rate_iops"),
        "{e}"
    );
}

#[test]
fn bad_jobs_name_the_field() {
    let e = JobSpec::from_toml_str("rw = \"sideways\"", "j.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("j.toml") && e.contains("rw"), "{e}");
    let e = JobSpec::from_toml_str("rw = \"read\"\nbs = \"3000\"", "j.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("bs"), "{e}");
    let e = spec("rw = \"read\"\nsize = \"2GiB\"")
        .fit(1 << 30)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("size") && e.contains("larger than the device"),
        "{e}"
    );
    let e = JobSpec::from_json(r#"{"rw":"read","ioengine":"windowsaio"}"#)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("field `ioengine`") && e.contains("windowsaio") && e.contains("posixaio"),
        "{e}"
    );
    let e = JobSpec::from_json(r#"{"rw":"read","iodepth":4,"iodepth_low":5}"#)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("field `iodepth_low`: got 5, expected 1 to iodepth (4)"),
        "{e}"
    );
    let e = JobSpec::from_toml_str("rw = \"read\"\ncolour = 1", "j.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("colour"), "{e}");
}
