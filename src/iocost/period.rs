//! Pure pieces of the period timer (`ioc_timer_fn`) that decide the seeds (spec §6):
//!
//! - [`period_us`]: period length from the qos (`ioc_refresh_period_us()`);
//! - [`Margins`]: min/low/target budgets (`ioc_refresh_margins()`);
//! - [`vrate_bound`]: qos min/max ppm → vtime per us (`ioc_refresh_vrate()` bounds);
//! - [`LatStats`]: missed_ppm (ceil) and rq_wait_pct (floor) (`ioc_lat_stat()`);
//! - [`next_busy_level`]: the busy_level state machine in its three named variants;
//! - [`adjust_base_vrate`]: `ioc_adjust_base_vrate()` incl. the 4% walk back into bounds,
//!   returning whether the kernel would emit the `iocost_ioc_vrate_adj` tracepoint;
//! - [`vrate_adj_line`]: that tracepoint's text.

use super::NoCompletion;
use super::model::VTIME_PER_USEC;

pub const MIN_PERIOD: u64 = 1000;
pub const MAX_PERIOD: u64 = 1_000_000;
pub const MARGIN_MIN_PCT: u64 = 10;
pub const MARGIN_LOW_PCT: u64 = 20;
pub const MARGIN_TARGET_PCT: u64 = 50;
pub const RQ_WAIT_BUSY_PCT: u32 = 5;
pub const UNBUSY_THR_PCT: u32 = 75;
pub const VRATE_CLAMP_ADJ_PCT: u64 = 4;
/// `vrate_adj_pct[]`, indexed by `min(|busy_level|, 52)`.
const VRATE_ADJ_PCT: [u64; 53] = {
    let mut t = [0u64; 53];
    let mut i = 0;
    while i < 53 {
        t[i] = match i {
            0..=3 => 0,
            4..=19 => 1,
            20..=35 => 2,
            36..=43 => 4,
            44..=51 => 8,
            _ => 16,
        };
        i += 1;
    }
    t
};

/// Mirrors `ioc_refresh_period_us()`: the direction with the larger latency target (ties
/// → read) sets `multi = max((1e6 − ppm) / 50000, 2)` (2 when ppm = 0).
pub fn period_us(rpct_ppm: u32, rlat: u32, wpct_ppm: u32, wlat: u32) -> u64 {
    let (ppm, lat) = if wlat > rlat {
        (wpct_ppm, wlat)
    } else {
        (rpct_ppm, rlat)
    };
    let multi = if ppm != 0 {
        (u64::from(1_000_000 - ppm.min(1_000_000)) / 50_000).max(2)
    } else {
        2
    };
    (multi * u64::from(lat)).clamp(MIN_PERIOD, MAX_PERIOD)
}

/// `ioc->margins`: budgets in vtime at the base vrate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Margins {
    pub min: u64,
    pub low: u64,
    pub target: u64,
}

impl Margins {
    /// Mirrors `ioc_refresh_margins()`.
    pub fn new(period_us: u64, vrate: u64) -> Self {
        Margins {
            min: period_us * MARGIN_MIN_PCT / 100 * vrate,
            low: period_us * MARGIN_LOW_PCT / 100 * vrate,
            target: period_us * MARGIN_TARGET_PCT / 100 * vrate,
        }
    }
}

/// qos bound in ppm → vtime per us, rounded up (`min=80` → 109,951).
pub fn vrate_bound(ppm: u32) -> u64 {
    (u64::from(ppm) * VTIME_PER_USEC).div_ceil(1_000_000)
}

/// One tick's latency statistics (`ioc_lat_stat()` output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LatStats {
    pub missed_ppm: [u32; 2],
    pub rq_wait_pct: u32,
    pub nr_done: u64,
}

impl LatStats {
    /// From per-direction `(met, missed)` deltas and the rq_wait ns delta.
    pub fn new(met: [u64; 2], missed: [u64; 2], rq_wait_ns: u64, period_us: u64) -> Self {
        let ppm = |d: usize| {
            let n = met[d] + missed[d];
            if n == 0 {
                0
            } else {
                (missed[d] * 1_000_000).div_ceil(n) as u32
            }
        };
        LatStats {
            missed_ppm: [ppm(0), ppm(1)],
            rq_wait_pct: (rq_wait_ns * 100 / (period_us * 1000)) as u32,
            nr_done: met.iter().chain(missed.iter()).sum(),
        }
    }
}

/// Mirrors the busy_level block of `ioc_timer_fn()`; `thr_ppm` = `10^6 − pct_ppm` per
/// direction. `v` selects the pre-fix / v2 / v3 handling of ticks without completions.
pub fn next_busy_level(
    busy: i32,
    lat: &LatStats,
    thr_ppm: [u32; 2],
    nr_lagging: u32,
    nr_shortages: u32,
    v: NoCompletion,
) -> i32 {
    let busy_cond = lat.rq_wait_pct > RQ_WAIT_BUSY_PCT
        || lat.missed_ppm[0] > thr_ppm[0]
        || lat.missed_ppm[1] > thr_ppm[1];
    let ok_cond = lat.rq_wait_pct <= RQ_WAIT_BUSY_PCT * UNBUSY_THR_PCT / 100
        && lat.missed_ppm[0] <= thr_ppm[0] * UNBUSY_THR_PCT / 100
        && lat.missed_ppm[1] <= thr_ppm[1] * UNBUSY_THR_PCT / 100;
    let no_done = lat.nr_done == 0;
    let next = match v {
        NoCompletion::KeepIfLagging if no_done && nr_lagging > 0 => busy,
        NoCompletion::Clamp4 if no_done => {
            if nr_lagging > 0 {
                busy.clamp(-4, 4)
            } else if nr_shortages > 0 {
                busy.min(0)
            } else {
                0
            }
        }
        _ if busy_cond => busy.max(0) + 1,
        _ if ok_cond && nr_shortages > 0 => busy.min(0) - i32::from(nr_lagging == 0),
        _ => 0,
    };
    next.clamp(-1000, 1000)
}

/// The early return of `ioc_adjust_base_vrate()`: the base vrate stays as it is when
/// busy_level is 0, or negative while IOs lag.
pub fn keeps_base_vrate(busy: i32, nr_lagging: u32) -> bool {
    busy == 0 || (busy < 0 && nr_lagging > 0)
}

/// Mirrors `ioc_adjust_base_vrate()`. Returns the new base vrate and whether the
/// `iocost_ioc_vrate_adj` tracepoint fires.
pub fn adjust_base_vrate(
    vrate: u64,
    busy: i32,
    prev_busy: i32,
    nr_lagging: u32,
    bounds: (u64, u64),
) -> (u64, bool) {
    let (vmin, vmax) = bounds;
    if keeps_base_vrate(busy, nr_lagging) {
        return (vrate, busy != prev_busy || nr_lagging > 0);
    }
    let new = if vrate < vmin {
        (vrate * (100 + VRATE_CLAMP_ADJ_PCT) / 100).min(vmin)
    } else if vrate > vmax {
        (vrate * (100 - VRATE_CLAMP_ADJ_PCT) / 100).max(vmax)
    } else {
        let adj = VRATE_ADJ_PCT[(busy.unsigned_abs() as usize).min(52)];
        let factor = if busy > 0 { 100 - adj } else { 100 + adj };
        (vrate * factor).div_ceil(100).clamp(vmin, vmax)
    };
    (new, true)
}

/// Percent with two decimals as the tracepoint prints a vrate (`vrate × 10000 /
/// VTIME_PER_USEC`, then `%llu.%02llu` of hundredths).
fn vrate_pct(vrate: u64) -> String {
    let h = vrate * 10_000 / VTIME_PER_USEC;
    format!("{}.{:02}%", h / 100, h % 100)
}

/// The `iocost_ioc_vrate_adj` line as the tracepoint prints it.
pub fn vrate_adj_line(
    old: u64,
    new: u64,
    busy: i32,
    lat: &LatStats,
    nr_lagging: u32,
    nr_shortages: u32,
) -> String {
    format!(
        "vrate={}->{} busy={} missed_ppm={}:{} rq_wait_pct={} lagging={} shortages={}",
        vrate_pct(old),
        vrate_pct(new),
        busy,
        lat.missed_ppm[0],
        lat.missed_ppm[1],
        lat.rq_wait_pct,
        nr_lagging,
        nr_shortages
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_lengths() {
        assert_eq!(period_us(900_000, 3500, 900_000, 3500), 7000);
        assert_eq!(period_us(800_000, 10_000, 0, 5000), 40_000);
        assert_eq!(period_us(500_000, 10_000, 0, 5000), 100_000);
        assert_eq!(period_us(0, 250_000, 0, 250_000), 500_000);
        assert_eq!(period_us(0, 25_000, 0, 25_000), 50_000);
        assert_eq!(period_us(0, 5_000, 0, 5_000), 10_000);
        assert_eq!(period_us(0, 100, 0, 100), MIN_PERIOD);
        assert_eq!(period_us(0, 4_000_000, 0, 1), MAX_PERIOD);
    }

    #[test]
    fn margins_and_bounds() {
        let m = Margins::new(7000, VTIME_PER_USEC);
        assert_eq!(
            (m.min, m.low, m.target),
            (96_206_600, 192_413_200, 481_033_000)
        );
        assert_eq!(vrate_bound(800_000), 109_951);
        assert_eq!(vrate_bound(10_000), 1375);
        assert_eq!(vrate_bound(100_000_000), 13_743_800);
    }

    #[test]
    fn lat_stats_rounding() {
        let l = LatStats::new([2, 0], [1, 0], 349_999, 7000);
        assert_eq!(l.missed_ppm, [333_334, 0]);
        assert_eq!(l.rq_wait_pct, 4);
        assert_eq!(l.nr_done, 3);
    }

    #[test]
    fn busy_level_variants_on_empty_tick() {
        let thr = [100_000, 100_000];
        let empty = LatStats::default();
        // the seed's bug: an empty tick with a shortage and lagging IO resets to 0
        assert_eq!(
            next_busy_level(3, &empty, thr, 3, 1, NoCompletion::Reset),
            0
        );
        assert_eq!(
            next_busy_level(3, &empty, thr, 3, 1, NoCompletion::KeepIfLagging),
            3
        );
        assert_eq!(
            next_busy_level(7, &empty, thr, 3, 1, NoCompletion::Clamp4),
            4
        );
        assert_eq!(
            next_busy_level(7, &empty, thr, 0, 1, NoCompletion::Clamp4),
            0
        );
        assert_eq!(
            next_busy_level(-7, &empty, thr, 0, 1, NoCompletion::Clamp4),
            -7
        );
        // not lagging: v3 falls through to the old rules (ok, shortage → -1)
        assert_eq!(
            next_busy_level(2, &empty, thr, 0, 1, NoCompletion::KeepIfLagging),
            -1
        );
        let missed = LatStats {
            missed_ppm: [1_000_000, 1_000_000],
            rq_wait_pct: 0,
            nr_done: 2,
        };
        for v in [
            NoCompletion::Reset,
            NoCompletion::Clamp4,
            NoCompletion::KeepIfLagging,
        ] {
            assert_eq!(next_busy_level(-3, &missed, thr, 0, 0, v), 1);
            assert_eq!(next_busy_level(999, &missed, thr, 0, 0, v), 1000);
        }
        // rpct=0 quirk: >75% missing is the hysteresis band → 0
        let band = LatStats {
            missed_ppm: [800_000, 0],
            rq_wait_pct: 0,
            nr_done: 5,
        };
        assert_eq!(
            next_busy_level(-5, &band, [1_000_000; 2], 0, 1, NoCompletion::Reset),
            0
        );
    }

    #[test]
    fn seed_vrate_trace() {
        let b = (vrate_bound(800_000), vrate_bound(100_000_000));
        let v0 = 175_244; // 127.50% (the only base vrate reproducing the seed trace)
        let (v1, emit) = adjust_base_vrate(v0, 4, 3, 3, b);
        assert!(emit);
        let lat = LatStats {
            missed_ppm: [1_000_000, 1_000_000],
            rq_wait_pct: 0,
            nr_done: 1,
        };
        assert_eq!(
            vrate_adj_line(v0, v1, 4, &lat, 3, 1),
            "vrate=127.50%->126.23% busy=4 missed_ppm=1000000:1000000 rq_wait_pct=0 lagging=3 shortages=1"
        );
        let (v2, _) = adjust_base_vrate(v1, 5, 4, 3, b);
        assert!(vrate_adj_line(v1, v2, 5, &lat, 3, 1).starts_with("vrate=126.23%->124.97% busy=5"));
        // busy 0 with lagging: unchanged, still traced
        assert_eq!(adjust_base_vrate(v2, 0, 5, 3, b), (v2, true));
        assert_eq!(adjust_base_vrate(v2, 0, 0, 0, b), (v2, false));
        assert_eq!(adjust_base_vrate(v2, -5, -4, 1, b), (v2, true));
        // below min: 4% walk, floor, capped at min
        assert_eq!(adjust_base_vrate(100_000, 1, 0, 0, b), (104_000, true));
        assert_eq!(adjust_base_vrate(108_000, 1, 0, 0, b), (109_951, true));
        // going up: ceil(v × 101 / 100)
        assert_eq!(adjust_base_vrate(137_438, -4, -3, 0, b), (138_813, true));
    }
}
