//! The iocost cost model: preset tables, coefficient derivation and per-bio absolute cost.
//!
//! - [`Autop`] / [`AUTOP`]: the kernel's `autop[]` presets (HDD, SSD_QD1, SSD_DFL,
//!   SSD_FAST) with their latency targets and linear-model inputs; [`Autop::select`]
//!   picks one from the queue as `ioc_autop_idx()` does at init.
//! - [`LinearInputs`]: the six `io.cost.model` numbers (bytes/s, IO/s per direction).
//! - [`Lcoefs`] / [`calc_lcoefs`]: vtime per 4 KiB page, per sequential IO and per random
//!   IO, mirroring `calc_lcoefs()` (ceil divisions kept).
//! - [`CostModel::abs_cost`]: `calc_vtime_cost_builtin()` — pages = floor(sectors/8) (≥1), seq/rand by
//!   cursor distance — plus the RFC `linear-max` variant (spec §3.5).

use crate::sim::bio::Dir;

/// Device-time units per second (2^37), `VTIME_PER_SEC`.
pub const VTIME_PER_SEC: u64 = 1 << 37;
/// 100% vrate per microsecond, `VTIME_PER_USEC`.
pub const VTIME_PER_USEC: u64 = VTIME_PER_SEC / 1_000_000;
/// Used only to turn a size cost into nanoseconds, `VTIME_PER_NSEC`.
pub const VTIME_PER_NSEC: u64 = VTIME_PER_SEC / 1_000_000_000;
/// Cost pages are 4 KiB (`IOC_PAGE_SHIFT`).
pub const IOC_PAGE_SIZE: u64 = 4096;
/// Seek distance (pages) above which an IO is random, `LCOEF_RANDIO_PAGES`.
pub const LCOEF_RANDIO_PAGES: u64 = 4096;

/// The six linear-model inputs of `io.cost.model`, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinearInputs {
    pub rbps: u64,
    pub rseqiops: u64,
    pub rrandiops: u64,
    pub wbps: u64,
    pub wseqiops: u64,
    pub wrandiops: u64,
}

/// One auto preset (`struct ioc_params` in `autop[]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Autop {
    /// Name as `iocost_monitor.py` prints it (`params=`).
    pub name: &'static str,
    /// rlat = wlat in microseconds.
    pub lat_us: u32,
    pub inputs: LinearInputs,
}

/// Preset index, as `AUTOP_HDD` … `AUTOP_SSD_FAST`.
pub const AUTOP_HDD: usize = 0;
pub const AUTOP_SSD_QD1: usize = 1;
pub const AUTOP_SSD_DFL: usize = 2;
pub const AUTOP_SSD_FAST: usize = 3;

const fn lin(r: [u64; 3], w: [u64; 3]) -> LinearInputs {
    LinearInputs {
        rbps: r[0],
        rseqiops: r[1],
        rrandiops: r[2],
        wbps: w[0],
        wseqiops: w[1],
        wrandiops: w[2],
    }
}

/// The kernel's `autop[]` table (spec §3.3).
pub const AUTOP: [Autop; 4] = [
    Autop {
        name: "hdd",
        lat_us: 250_000,
        inputs: lin([174019176, 41708, 370], [178075866, 42705, 378]),
    },
    Autop {
        name: "ssd_qd1",
        lat_us: 25_000,
        inputs: lin([245855193, 61575, 6946], [141365009, 33716, 26796]),
    },
    Autop {
        name: "ssd_dfl",
        lat_us: 25_000,
        inputs: lin([488636629, 8932, 8518], [427891549, 28755, 21940]),
    },
    Autop {
        name: "ssd_fast",
        lat_us: 5_000,
        inputs: lin([3102524156, 724816, 778122], [1742780862, 425702, 443193]),
    },
];

impl Autop {
    /// Initial preset for a queue, mirrors `ioc_autop_idx()` at init: rotational → HDD,
    /// queue depth 1 → SSD_QD1, otherwise SSD_DFL (the DFL↔FAST switch needs 10 s of
    /// vrate history and is not modelled).
    pub fn select(rotational: bool, queue_depth: u32) -> usize {
        if rotational {
            AUTOP_HDD
        } else if queue_depth == 1 {
            AUTOP_SSD_QD1
        } else {
            AUTOP_SSD_DFL
        }
    }
}

/// Linear coefficients of one direction, in vtime units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lcoefs {
    pub page: u64,
    pub seqio: u64,
    pub randio: u64,
}

/// Mirrors `calc_lcoefs()`: `page = ceil(VTIME_PER_SEC / ceil(bps / 4096))`, and the
/// per-IO terms are `ceil(VTIME_PER_SEC / iops) − page` floored at 0.
pub fn calc_lcoefs(bps: u64, seqiops: u64, randiops: u64) -> Lcoefs {
    let page = if bps == 0 {
        0
    } else {
        VTIME_PER_SEC.div_ceil(bps.div_ceil(IOC_PAGE_SIZE))
    };
    let per_io = |iops: u64| {
        if iops == 0 {
            0
        } else {
            VTIME_PER_SEC.div_ceil(iops).saturating_sub(page)
        }
    };
    Lcoefs {
        page,
        seqio: per_io(seqiops),
        randio: per_io(randiops),
    }
}

/// Cost function shape: mainline `linear` or the RFC's `linear-max` (spec §3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    Linear,
    LinearMax,
}

impl ModelKind {
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Linear => "linear",
            ModelKind::LinearMax => "linear-max",
        }
    }
}

/// Coefficients of both directions plus the model shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostModel {
    pub kind: ModelKind,
    pub coefs: [Lcoefs; 2],
}

impl CostModel {
    pub fn new(kind: ModelKind, i: &LinearInputs) -> Self {
        CostModel {
            kind,
            coefs: [
                calc_lcoefs(i.rbps, i.rseqiops, i.rrandiops),
                calc_lcoefs(i.wbps, i.wseqiops, i.wrandiops),
            ],
        }
    }

    /// Mirrors `calc_vtime_cost_builtin()`: absolute vtime cost of a READ/WRITE bio of
    /// `bytes` at `sector`, for an iocg whose cursor is `cursor` (0 = none yet).
    pub fn abs_cost(&self, dir: Dir, sector: u64, bytes: u64, cursor: u64) -> u64 {
        let c = &self.coefs[dir.idx()];
        let sectors = bytes >> 9;
        if sectors == 0 {
            return 0;
        }
        let pages = (sectors >> 3).max(1);
        let seek_pages = if cursor != 0 {
            sector.abs_diff(cursor) >> 3
        } else {
            0
        };
        let base = if seek_pages > LCOEF_RANDIO_PAGES {
            c.randio
        } else {
            c.seqio
        };
        match self.kind {
            ModelKind::Linear => base + pages * c.page,
            ModelKind::LinearMax => (base + c.page).max(pages * c.page),
        }
    }

    /// `calc_vtime_cost(.., is_merge)`: a bio merged into a request costs its pages
    /// only (no seek part).
    pub fn merge_cost(&self, dir: Dir, bytes: u64) -> u64 {
        let sectors = bytes >> 9;
        if sectors == 0 {
            return 0;
        }
        (sectors >> 3).max(1) * self.coefs[dir.idx()].page
    }

    /// Size-only cost of a completed request, converted to ns (spec §3.4).
    pub fn size_cost_ns(&self, dir: Dir, bytes: u64) -> u64 {
        ((bytes >> 9) >> 3) * self.coefs[dir.idx()].page / VTIME_PER_NSEC
    }

    /// True when every coefficient is 0: IOs cost nothing and bypass iocost.
    pub fn is_free(&self) -> bool {
        self.coefs.iter().all(|c| *c == Lcoefs::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preset_coefficients_match_spec_table() {
        let want: [([u64; 3], [u64; 3]); 4] = [
            ([3234924, 60342, 368221708], [3161261, 57074, 360433855]),
            ([2289734, 0, 17497044], [3982238, 94134, 1146847]),
            ([1152074, 14235181, 14983047], [1315634, 3464021, 4948676]),
            ([181449, 8171, 0], [323018, 0, 0]),
        ];
        for (p, (r, w)) in AUTOP.iter().zip(want) {
            let m = CostModel::new(ModelKind::Linear, &p.inputs);
            let got_r = m.coefs[0];
            let got_w = m.coefs[1];
            assert_eq!(
                [got_r.page, got_r.seqio, got_r.randio],
                r,
                "{} read",
                p.name
            );
            assert_eq!(
                [got_w.page, got_w.seqio, got_w.randio],
                w,
                "{} write",
                p.name
            );
        }
    }

    fn seed() -> CostModel {
        CostModel::new(
            ModelKind::Linear,
            &lin([173471131, 3566, 3566], [173333269, 3566, 3566]),
        )
    }

    #[test]
    fn seed_disk_costs() {
        let m = seed();
        assert_eq!(m.coefs[0].page, 3245159);
        assert_eq!(m.coefs[0].randio, 35296332);
        assert_eq!(m.coefs[1].page, 3247766);
        assert_eq!(m.coefs[1].seqio, 35293725);
        // random: far from the cursor
        let far = 1 << 30;
        assert_eq!(m.abs_cost(Dir::Read, far, 4096, 8), 38_541_491);
        assert_eq!(m.abs_cost(Dir::Read, far, 1 << 20, 8), 866_057_036);
        let w = CostModel::new(
            ModelKind::Linear,
            &lin([173471131, 3566, 3566], [173333269, 3566, 3559]),
        );
        assert_eq!(w.coefs[1].randio, 35369530);
    }

    #[test]
    fn pages_floor_and_seek_threshold() {
        let m = seed();
        let c = m.coefs[0];
        // 6 KiB = 12 sectors = 1 page; 48,640 bytes = 95 sectors = 11 pages.
        assert_eq!(m.abs_cost(Dir::Read, 0, 6144, 0), c.seqio + c.page);
        assert_eq!(m.abs_cost(Dir::Read, 0, 48_640, 0), c.seqio + 11 * c.page);
        // exactly 4096 pages away is sequential, one page more is random
        let cur = 100_000;
        assert_eq!(
            m.abs_cost(Dir::Read, cur + 4096 * 8, 4096, cur),
            c.seqio + c.page
        );
        assert_eq!(
            m.abs_cost(Dir::Read, cur + 4097 * 8, 4096, cur),
            c.randio + c.page
        );
        assert_eq!(m.abs_cost(Dir::Read, 0, 0, 0), 0);
    }

    #[test]
    fn a_merged_bio_costs_its_pages_only() {
        let m = seed();
        let c = m.coefs[1];
        // calc_vtime_cost(.., is_merge): no seqio/randio part, wherever the cursor is
        assert_eq!(m.merge_cost(Dir::Write, 4096), c.page);
        assert_eq!(m.merge_cost(Dir::Write, 16 << 10), 4 * c.page);
        assert_eq!(m.merge_cost(Dir::Write, 512), c.page);
        assert_eq!(m.merge_cost(Dir::Write, 0), 0);
        assert!(m.merge_cost(Dir::Write, 4096) < m.abs_cost(Dir::Write, 8, 4096, 8));
    }

    #[test]
    fn linear_max_vs_linear_ratio() {
        let lin_m = seed();
        let max_m = CostModel {
            kind: ModelKind::LinearMax,
            ..lin_m
        };
        let c = lin_m.coefs[0];
        // 4 KiB: identical; 1 MiB: pure bandwidth term.
        assert_eq!(
            max_m.abs_cost(Dir::Read, 1 << 30, 4096, 8),
            lin_m.abs_cost(Dir::Read, 1 << 30, 4096, 8)
        );
        assert_eq!(max_m.abs_cost(Dir::Read, 1 << 30, 1 << 20, 8), 256 * c.page);
        // spec §3.5: 11 pages ×1.84, 12 pages ×1.91, 32 KiB ×1.59, 128 KiB ×1.34, 1 MiB ×1.04
        let l = lin_m.abs_cost(Dir::Read, 1 << 30, 48_640, 8);
        let x = max_m.abs_cost(Dir::Read, 1 << 30, 48_640, 8);
        assert_eq!(x, c.randio + c.page);
        assert_eq!((l * 100 + x / 2) / x, 184);
        for (bytes, pct) in [
            (12 * 4096, 191),
            (32 << 10, 159),
            (128 << 10, 134),
            (1 << 20, 104),
        ] {
            let l = lin_m.abs_cost(Dir::Read, 1 << 30, bytes, 8);
            let x = max_m.abs_cost(Dir::Read, 1 << 30, bytes, 8);
            assert_eq!((l * 100 + x / 2) / x, pct, "{bytes}");
        }
    }

    #[test]
    fn size_cost_ns_uses_floor() {
        let m = seed();
        assert_eq!(m.size_cost_ns(Dir::Read, 1 << 20), 256 * 3245159 / 137);
        assert_eq!(m.size_cost_ns(Dir::Read, 2048), 0);
    }

    #[test]
    fn autop_selection() {
        assert_eq!(Autop::select(true, 1), AUTOP_HDD);
        assert_eq!(Autop::select(false, 1), AUTOP_SSD_QD1);
        assert_eq!(Autop::select(false, 64), AUTOP_SSD_DFL);
    }
}
