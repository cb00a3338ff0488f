//! `io.cost.model` (root cgroup only): parsing and printing as `ioc_cost_model_write()`
//! and `ioc_cost_model_prfill()` do, plus the RFC's `model=linear-max` (spec §3.5).
//!
//! [`ModelParams::apply_write`] applies tokens left to right onto a copy of the current
//! state: coefficient tokens set user mode, `ctrl=` flips it, `model=` names the shape.
//! A write ending in auto mode reloads the preset inputs (and the shape stays `linear`,
//! since linear-max is only kept in user mode).

use super::iocost_qos::parse_c_u64;
use super::{Errno, KernelError};
use crate::iocost::model::{LinearInputs, ModelKind};

/// The model state of one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelParams {
    /// `ctrl=user` (`ioc->user_cost_model`).
    pub user: bool,
    pub kind: ModelKind,
    pub inputs: LinearInputs,
}

impl ModelParams {
    pub fn auto(preset: &LinearInputs) -> Self {
        ModelParams {
            user: false,
            kind: ModelKind::Linear,
            inputs: *preset,
        }
    }

    /// Mirrors the token loop of `ioc_cost_model_write()`.
    pub fn apply_write(
        &self,
        body: &str,
        preset: &LinearInputs,
    ) -> Result<ModelParams, KernelError> {
        let mut m = *self;
        for tok in body.split([' ', '\t', '\n']).filter(|t| !t.is_empty()) {
            let einval = |what: &str| KernelError::new(Errno::EINVAL, format!("`{tok}`: {what}"));
            let (key, val) = tok.split_once('=').ok_or_else(|| {
                einval("expected key=value (ctrl, model, rbps, rseqiops, rrandiops, wbps, wseqiops, wrandiops)")
            })?;
            let i = &mut m.inputs;
            let slot = match key {
                "ctrl" => {
                    m.user = match val {
                        "auto" => false,
                        "user" => true,
                        _ => return Err(einval("ctrl must be `auto` or `user`")),
                    };
                    continue;
                }
                "model" => {
                    m.kind = match val {
                        "linear" => ModelKind::Linear,
                        "linear-max" => ModelKind::LinearMax,
                        _ => return Err(einval("model must be `linear` or `linear-max`")),
                    };
                    continue;
                }
                "rbps" => &mut i.rbps,
                "rseqiops" => &mut i.rseqiops,
                "rrandiops" => &mut i.rrandiops,
                "wbps" => &mut i.wbps,
                "wseqiops" => &mut i.wseqiops,
                "wrandiops" => &mut i.wrandiops,
                _ => return Err(einval("unknown key")),
            };
            *slot = parse_c_u64(val).ok_or_else(|| einval("takes an unsigned integer"))?;
            m.user = true;
        }
        if !m.user {
            m = ModelParams::auto(preset);
        }
        Ok(m)
    }

    /// Mirrors `ioc_cost_model_prfill()`.
    pub fn show(&self, dev: (u32, u32)) -> String {
        let i = &self.inputs;
        format!(
            "{}:{} ctrl={} model={} rbps={} rseqiops={} rrandiops={} wbps={} wseqiops={} wrandiops={}\n",
            dev.0,
            dev.1,
            if self.user { "user" } else { "auto" },
            self.kind.name(),
            i.rbps,
            i.rseqiops,
            i.rrandiops,
            i.wbps,
            i.wseqiops,
            i.wrandiops
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iocost::model::{AUTOP, AUTOP_SSD_DFL};

    fn write(body: &str) -> Result<ModelParams, KernelError> {
        let p = &AUTOP[AUTOP_SSD_DFL].inputs;
        ModelParams::auto(p).apply_write(body, p)
    }

    #[test]
    fn seed_model_line() {
        let m = write("ctrl=user model=linear rbps=173471131 rseqiops=3566 rrandiops=3566 wbps=173333269 wseqiops=3566 wrandiops=3566").unwrap();
        assert_eq!(
            m.show((8, 16)),
            "8:16 ctrl=user model=linear rbps=173471131 rseqiops=3566 rrandiops=3566 wbps=173333269 wseqiops=3566 wrandiops=3566\n"
        );
    }

    #[test]
    fn auto_reload_and_linear_max() {
        let m = write("rbps=1 ctrl=auto").unwrap();
        assert_eq!(m, ModelParams::auto(&AUTOP[AUTOP_SSD_DFL].inputs));
        let m = write("model=linear-max").unwrap();
        assert_eq!(m.kind, ModelKind::Linear, "linear-max dropped in auto mode");
        let m = write("model=linear-max rbps=0x10").unwrap();
        assert_eq!(
            (m.kind, m.inputs.rbps, m.user),
            (ModelKind::LinearMax, 16, true)
        );
        assert_eq!(write("rbps=010").unwrap().inputs.rbps, 8);
    }

    #[test]
    fn every_error() {
        for body in [
            "ctrl=x",
            "model=quadratic",
            "rbps=-1",
            "rbps=1k",
            "rbps",
            "foo=1",
            "rbps=99999999999999999999",
        ] {
            assert_eq!(write(body).unwrap_err().errno, Errno::EINVAL, "{body}");
        }
    }
}
