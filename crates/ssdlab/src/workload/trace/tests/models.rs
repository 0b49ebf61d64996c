//! The workload models: a model's trace read back recovers its parameters, a model is
//! deterministic, and every named model matches its published read ratio and sizes.

use super::*;

#[test]
fn model_round_trip_recovers_its_parameters() {
    // Generate a stand-in, then measure it: the knobs come back within stated tolerances.
    // 200,000 requests on 64 MiB: every block is touched (so the hot set can be measured) and
    // the fresh writes (10 % of ~350 MB) still fit in the footprint.
    let p = model::parse_spec(
        "financial1,count=200000,footprint=64MiB,overwrite=0.9,hot_fraction=0.2,seq_run=3",
    )
    .unwrap();
    let want = p.clone();
    let mut g = model::Generator::new(p, 5);
    let mut s = TraceStats::new(StatsOptions::default());
    while let Some(r) = g.next_record() {
        s.add(&r);
    }
    let m = s.summary();
    let close = |got: f64, want: f64, tol: f64, what: &str| {
        assert!(
            (got - want).abs() <= tol,
            "{what}: got {got}, want {want} ± {tol}"
        );
    };
    close(
        m.read_ratio_by_count,
        want.read_fraction,
        0.01,
        "read fraction",
    );
    close(
        m.read.mean_bytes / want.read_size.mean(),
        1.0,
        0.03,
        "mean read size",
    );
    close(
        m.write.mean_bytes / want.write_size.mean(),
        1.0,
        0.03,
        "mean write size",
    );
    close(
        m.overwrite.overwrite_ratio,
        want.overwrite_ratio,
        0.02,
        "overwrite ratio",
    );
    close(
        m.sequential.mean_run_requests / want.seq_run_requests,
        1.0,
        0.05,
        "run length",
    );
    close(
        m.hot_set.fraction_for_80pct,
        want.hot_fraction,
        0.05,
        "hot fraction",
    );
    close(m.time.iops / want.iops, 1.0, 0.02, "arrival rate");
}

#[test]
fn models_are_deterministic() {
    let run = || {
        let mut g = model::Generator::new(model::parse_spec("msnfs,count=2000").unwrap(), 9);
        std::iter::from_fn(|| g.next_record()).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn every_named_model_matches_its_published_ratio_and_sizes() {
    for m in model::MODELS {
        let mut p = (m.params)();
        p.count = 60_000;
        let want = p.clone();
        let mut g = model::Generator::new(p, 11);
        let mut s = TraceStats::new(StatsOptions::default());
        while let Some(r) = g.next_record() {
            s.add(&r);
        }
        let got = s.summary();
        let name = m.name;
        assert!(
            (got.read_ratio_by_count - want.read_fraction).abs() < 0.01,
            "{name}: read fraction {} vs {}",
            got.read_ratio_by_count,
            want.read_fraction
        );
        for (what, got, want, n) in [
            (
                "read size",
                got.read.mean_bytes,
                want.read_size.mean(),
                got.reads,
            ),
            (
                "write size",
                got.write.mean_bytes,
                want.write_size.mean(),
                got.writes,
            ),
        ] {
            // Fewer than 1,000 requests of a kind (web1's writes) say little about its mean.
            if n >= 1000 {
                assert!(
                    (got / want - 1.0).abs() < 0.05,
                    "{name}: {what} {got} vs {want}"
                );
            }
        }
        let run = got.sequential.mean_run_requests / want.seq_run_requests;
        assert!((run - 1.0).abs() < 0.1, "{name}: run length ratio {run}");
        let iops = got.time.iops / want.iops;
        assert!(
            (iops - 1.0).abs() < 0.03,
            "{name}: arrival rate ratio {iops}"
        );
    }
}
