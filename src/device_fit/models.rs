//! The three fits: what the fio measurements determine of each model, closed-form or
//! least squares, and which keys stay at the model's defaults and why.
//!
//! Every latency a fio job reports as clat includes the host's completion path; the
//! simulation adds it back ([`HostCosts::complete_cost`] of the default host profile,
//! `crate::scenario::host_profile`), so it
//! is subtracted first: what is left is the device's own time.

use super::jobs::{
    RANDREAD_QD1, RANDREAD_QD32, RANDWRITE_QD1, RANDWRITE_QD32, READ_1M_QD32, READ_128K_QD1,
    WRITE_1M_QD32, WRITE_128K_QD1,
};
use super::{Fitted, Measured, Set};
use crate::device::cloud::io_units;
use crate::scenario::host_profile::default_profile;

/// fio's IOPS, bandwidth and clat figures of the figures table (`compare::FIGURES`).
pub const IOPS: usize = 0;
pub const MIB_S: usize = 1;
pub const CLAT_MEAN: usize = 3;
pub const CLAT_P50: usize = 4;
pub const CLAT_P99: usize = 7;

/// The host's completion cost of an I/O of `bytes`, µs.
fn host_us(bytes: u64) -> f64 {
    default_profile().costs().complete_cost(bytes) as f64 / 1000.0
}

/// A measured job's device time per I/O at QD1: clat mean less the host's part, µs.
fn device_us(m: &Measured) -> f64 {
    (m.clat_us - host_us(m.bs)).max(1.0)
}

fn get(set: &Set, i: usize) -> &Measured {
    set[i]
        .as_ref()
        .expect("required measurement checked by the caller")
}

/// fio's percentile `p` of a measured job's clat, µs (the nearest fio reports).
fn pct(m: &Measured, p: f64) -> f64 {
    m.pcts
        .iter()
        .min_by(|a, b| (a.0 - p).abs().total_cmp(&(b.0 - p).abs()))
        .map_or(m.clat_us, |x| x.1)
}

fn int(v: f64, lo: u64, hi: u64) -> toml::Value {
    toml::Value::Integer(v.round().clamp(lo as f64, hi as f64) as i64)
}

/// `ssd` (`mode = "simple"`): `channels` servers each taking `lat + bytes / bw`.
///
/// - per-IO time at QD1, s = clat(4k QD1) − host, per direction;
/// - channels: each QD32 4 KiB job says `IOPS × s`; one value for both directions by
///   least squares on the logarithms (the geometric mean);
/// - per-channel bandwidth: the 1 MiB QD32 bandwidth is min(channels, 32) requests
///   in flight, each `lat + 1 MiB / bw` with `lat = s − 4 KiB / bw`, solved for bw;
/// - jitter: a uniform ±j spreads QD1 latencies so that p90 − p10 = 1.6 j × median.
pub fn ssd(set: &Set) -> Result<Fitted, String> {
    let mut f = Fitted::new("ssd");
    f.put(
        "mode",
        toml::Value::String("simple".into()),
        "the model fitted: channels × (latency + size / bandwidth)".into(),
    );
    let (rr1, rw1) = (get(set, RANDREAD_QD1), get(set, RANDWRITE_QD1));
    let (rr32, rw32) = (get(set, RANDREAD_QD32), get(set, RANDWRITE_QD32));
    let (s_r, s_w) = (device_us(rr1), device_us(rw1));
    let ch_r = rr32.iops * s_r / 1e6;
    let ch_w = rw32.iops * s_w / 1e6;
    let ch = ((ch_r.ln() + ch_w.ln()) / 2.0)
        .exp()
        .round()
        .clamp(1.0, 1024.0);
    f.put(
        "channels",
        int(ch, 1, 1024),
        format!(
            "randread-4k-qd32 {:.0} IOPS × {s_r:.1} µs = {ch_r:.2}, randwrite-4k-qd32 {:.0} IOPS × {s_w:.1} µs = {ch_w:.2}: their geometric mean{}",
            rr32.iops,
            rw32.iops,
            if ch >= 32.0 { " (32 or more: the QD32 jobs cannot tell more)" } else { "" }
        ),
    );
    let q = ch.min(32.0);
    for (dir, s, qd1, big) in [
        ("read", s_r, rr1, get(set, READ_1M_QD32)),
        ("write", s_w, rw1, get(set, WRITE_1M_QD32)),
    ] {
        // µs per 1 MiB request on a channel, less the latency: bytes per µs = MB/s
        let per = q * (1u64 << 20) as f64 / big.bw * 1e6 - s;
        let mbps = if per > 0.0 {
            ((1u64 << 20) - 4096) as f64 / per
        } else {
            1e6
        };
        let mbps = mbps.round().clamp(1.0, 1e6);
        let lat = (s - 4096.0 / mbps).max(0.0);
        let key = if dir == "read" {
            "read_mbps"
        } else {
            "write_mbps"
        };
        f.put(
            key,
            int(mbps, 1, 1_000_000),
            format!(
                "per channel: {} {:.0} MB/s over {q} channels, each 1 MiB taking latency + 1 MiB / bw",
                if dir == "read" { "read-1m-qd32" } else { "write-1m-qd32" },
                big.bw / 1e6
            ),
        );
        let key = if dir == "read" {
            "read_lat_us"
        } else {
            "write_lat_us"
        };
        f.put(
            key,
            int(lat, 0, 10_000_000),
            format!(
                "rand{dir}-4k-qd1 clat mean {:.1} µs − {:.1} µs host completion − 4 KiB at {mbps} MB/s",
                qd1.clat_us,
                host_us(4096)
            ),
        );
    }
    let spread = |m: &Measured| (pct(m, 90.0) - pct(m, 10.0)) / (1.6 * pct(m, 50.0)) * 100.0;
    let j = ((spread(rr1) + spread(rw1)) / 2.0).clamp(0.0, 99.0);
    f.put(
        "jitter_pct",
        int(j, 0, 99),
        format!(
            "the QD1 4 KiB jobs' (p90 − p10) / (1.6 × p50): read {:.0}%, write {:.0}%, mean (at most 99)",
            spread(rr1),
            spread(rw1)
        ),
    );
    f.default("queue_depth, max_sectors_kb, size_gb, dev, name: the disk's identity and queue, not measured by these jobs");
    f.targets = vec![
        (RANDREAD_QD1, CLAT_MEAN),
        (RANDWRITE_QD1, CLAT_MEAN),
        (RANDREAD_QD32, IOPS),
        (RANDWRITE_QD32, IOPS),
        (READ_1M_QD32, MIB_S),
        (WRITE_1M_QD32, MIB_S),
    ];
    Ok(f)
}

/// E\[sqrt(|U − V|)\] for U, V uniform on \[0, 1\]: the mean of the seek curve's
/// square-root term over uniform random positions (hdd.rs).
const MEAN_SQRT_DIST: f64 = 8.0 / 15.0;
/// Capacity of the fitted disk: the `hdd` model's default `size_gb`.
const HDD_SIZE_GB: f64 = 1000.0;

/// `hdd`: seek(distance) + rotation + transfer.
///
/// - transfer rate: the 1 MiB QD32 sequential jobs (no seek or rotation between
///   consecutive requests), read and write by least squares on the logarithms;
/// - rotation: uniform over a revolution, so QD1 random reads spread p90 − p10 ≈ 0.8
///   of one (the seek's own spread is smaller);
/// - seek: what QD1 random access time leaves after half a revolution and the
///   transfer, as the mean of the seek curve over the jobs' span (their `size`).
pub fn hdd(set: &Set) -> Result<Fitted, String> {
    let mut f = Fitted::new("hdd");
    let (r1m, w1m) = (get(set, READ_1M_QD32), get(set, WRITE_1M_QD32));
    let mbps = (r1m.bw * w1m.bw).sqrt() / 1e6;
    let mbps = mbps.round().clamp(1.0, 100_000.0);
    f.put(
        "mbps",
        int(mbps, 1, 100_000),
        format!(
            "read-1m-qd32 {:.0} MB/s and write-1m-qd32 {:.0} MB/s: their geometric mean",
            r1m.bw / 1e6,
            w1m.bw / 1e6
        ),
    );
    let (rr1, rw1) = (get(set, RANDREAD_QD1), get(set, RANDWRITE_QD1));
    let access = (device_us(rr1) + device_us(rw1)) / 2.0 - 4096.0 / mbps;
    let rev_us = ((pct(rr1, 90.0) - pct(rr1, 10.0)) / 0.8).max(1.0);
    let rpm = (60e6 / rev_us).round().clamp(1000.0, 20000.0);
    let half = 30e6 / rpm;
    let seek = access - half;
    if seek <= 0.0 {
        return Err(format!(
            "--model hdd: the QD1 random access time, {access:.0} µs, leaves no time to seek after half a revolution at {rpm} rpm ({half:.0} µs): these are not a hard disk's measurements; accepted models: ssd, hdd, cloud (try --model ssd or cloud)"
        ));
    }
    f.put(
        "rpm",
        int(rpm, 1000, 20000),
        format!(
            "randread-4k-qd1 p90 − p10 = {:.0} µs taken as 0.8 of a revolution",
            pct(rr1, 90.0) - pct(rr1, 10.0)
        ),
    );
    let t2t = seek.min(500.0);
    let span = match (rr1.span, rw1.span) {
        (Some(a), Some(b)) => a.max(b) as f64 / (HDD_SIZE_GB * 1e9),
        _ => 1.0,
    }
    .min(1.0);
    let full = t2t + (seek - t2t) / (MEAN_SQRT_DIST * span.sqrt());
    f.put(
        "track_to_track_us",
        int(t2t, 0, 1_000_000),
        "the model's default (500), or the mean seek if shorter: not separable from the mean seek by these jobs".into(),
    );
    f.put(
        "full_stroke_us",
        int(full, t2t as u64, 1_000_000),
        format!(
            "mean seek {seek:.0} µs = QD1 4 KiB random clat means {:.0}/{:.0} µs − host − half a revolution − transfer, over {:.4} of a {HDD_SIZE_GB} GB disk (the jobs' size)",
            rr1.clat_us, rw1.clat_us, span
        ),
    );
    f.put(
        "size_gb",
        int(HDD_SIZE_GB, 1, 1 << 20),
        "the model's default: fio does not report the disk's size; full_stroke_us is scaled to it"
            .into(),
    );
    f.default(
        "queue_depth, rot_mode, max_sectors_kb, dev, name, scheduler: not measured by these jobs",
    );
    f.targets = vec![
        (RANDREAD_QD1, CLAT_MEAN),
        (RANDWRITE_QD1, CLAT_MEAN),
        (READ_1M_QD32, MIB_S),
        (WRITE_1M_QD32, MIB_S),
    ];
    Ok(f)
}

/// fio's percentiles the cloud model takes as `latency_pcts`.
const CLOUD_PCTS: [(&str, f64); 5] = [
    ("p50", 50.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p999", 99.9),
    ("p9999", 99.99),
];

/// The mean of the cloud model's piecewise-linear quantile function through `pts`
/// (probability, µs), with p0 at half the first value and flat past the last
/// (`cloud::LatDist::Pcts`).
fn quantile_mean(pts: &[(f64, f64)]) -> f64 {
    let mut all = vec![(0.0, pts[0].1 / 2.0)];
    all.extend_from_slice(pts);
    let area: f64 = all
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum();
    let last = all[all.len() - 1];
    area + (1.0 - last.0) * last.1
}

/// `cloud`: token buckets for IOPS (256 KiB units) and bytes, then a per-IO latency.
///
/// - per-byte transfer (`xfer_bps`): QD1 128 KiB against QD1 4 KiB clat, per
///   direction, averaged;
/// - base latency: QD1 4 KiB clat less host and transfer, per direction; its tail
///   (`latency_pcts`) from the QD1 random read percentiles, exact for reads; writes
///   get the same shape scaled to their own mean;
/// - caps: the most 256 KiB units and bytes per second any job did: what the volume
///   allowed (a lower bound when no job reached the cap).
pub fn cloud(set: &Set) -> Result<Fitted, String> {
    let mut f = Fitted::new("cloud");
    let (rr1, rw1) = (get(set, RANDREAD_QD1), get(set, RANDWRITE_QD1));
    let (r128, w128) = (get(set, READ_128K_QD1), get(set, WRITE_128K_QD1));
    let extra = |big: &Measured, small: &Measured| device_us(big) - device_us(small);
    let tau = (extra(r128, rr1) + extra(w128, rw1)) / 2.0 / ((128 << 10) - 4096) as f64;
    let xfer_bps = if tau > 0.0 { 1e6 / tau } else { 0.0 };
    f.put(
        "xfer_bps",
        int(xfer_bps, 0, 1 << 40),
        format!(
            "read-128k-qd1 and write-128k-qd1 take {:.0} and {:.0} µs more than 4 KiB at QD1: 124 KiB at this rate (0 = no size term)",
            extra(r128, rr1),
            extra(w128, rw1)
        ),
    );
    let x4 = 4096.0 * tau.max(0.0);
    let lat_r = (device_us(rr1) - x4).max(1.0);
    let lat_w = (device_us(rw1) - x4).max(1.0);
    let mut pts: Vec<(f64, f64)> = Vec::new();
    let mut pcts = toml::Table::new();
    for (key, p) in CLOUD_PCTS {
        let prev = pts.last().map_or(1.0, |x| x.1);
        let v = (pct(rr1, p) - host_us(4096) - x4).round().max(prev);
        pts.push((p / 100.0, v));
        pcts.insert(key.into(), toml::Value::Integer(v as i64));
    }
    let mean = quantile_mean(&pts);
    f.put(
        "latency_dist",
        toml::Value::String("pcts".into()),
        "the measured tail, below".into(),
    );
    f.put(
        "latency_pcts",
        toml::Value::Table(pcts),
        "randread-4k-qd1's clat percentiles less host and transfer, µs".into(),
    );
    f.put(
        "latency_us",
        int(lat_r, 0, 10_000_000),
        format!(
            "randread-4k-qd1 clat mean {:.1} µs − {:.1} µs host − 4 KiB transfer (reads: the percentiles above as given; their mean is {mean:.0} µs)",
            rr1.clat_us,
            host_us(4096)
        ),
    );
    f.put(
        "write_latency_us",
        int(lat_w * lat_r / mean, 0, 10_000_000),
        format!(
            "randwrite-4k-qd1 clat mean {:.1} µs less host and transfer = {lat_w:.0} µs, scaled by latency_us / {mean:.0} so the read shape gives that mean",
            rw1.clat_us
        ),
    );
    let measured: Vec<&Measured> = set.iter().flatten().collect();
    let units = measured
        .iter()
        .map(|m| m.iops * io_units(m.bs) as f64)
        .fold(0.0, f64::max);
    let bw = measured.iter().map(|m| m.bw).fold(0.0, f64::max);
    let qd1_bound = 32e6 / rr1.clat_us;
    f.put(
        "iops",
        int(units.ceil(), 1, 100_000_000),
        format!(
            "the most 256 KiB units per second any job did; randread-4k-qd32 did {:.0} IOPS where 32 requests at the QD1 latency would do {qd1_bound:.0}: {}",
            get(set, RANDREAD_QD32).iops,
            if get(set, RANDREAD_QD32).iops < 0.5 * qd1_bound {
                "held back, by a cap or the backend's queueing"
            } else {
                "not held back, so the cap is at least this"
            }
        ),
    );
    f.put(
        "bps",
        int(bw.ceil(), 1, 1 << 40),
        format!(
            "the most bytes per second a job did (read-1m-qd32 {:.0} MB/s, write-1m-qd32 {:.0} MB/s)",
            get(set, READ_1M_QD32).bw / 1e6,
            get(set, WRITE_1M_QD32).bw / 1e6
        ),
    );
    f.default("refill_ms, bucket depths, bursting, hw_queue_depth, size_gb, dev, name: azure-p20's (the model's base preset); credit bursting is not measured by runs this short");
    f.targets = vec![
        (RANDREAD_QD1, CLAT_MEAN),
        (RANDREAD_QD1, CLAT_P50),
        (RANDREAD_QD1, CLAT_P99),
        (RANDWRITE_QD1, CLAT_MEAN),
        (READ_128K_QD1, CLAT_MEAN),
        (WRITE_128K_QD1, CLAT_MEAN),
        (RANDREAD_QD32, IOPS),
        (RANDWRITE_QD32, IOPS),
        (READ_1M_QD32, MIB_S),
        (WRITE_1M_QD32, MIB_S),
    ];
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_mean_of_a_flat_and_a_ramp() {
        // p0 = 50, p50 = 100, flat after: 0.5 × 75 + 0.5 × 100
        assert_eq!(quantile_mean(&[(0.5, 100.0)]), 87.5);
        let m = quantile_mean(&[(0.5, 100.0), (0.99, 400.0)]);
        assert!((m - (37.5 + 0.49 * 250.0 + 0.01 * 400.0)).abs() < 1e-9);
    }
}
