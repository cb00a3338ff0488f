//! Device configuration: the scenario's `[device]` table, read key by key.
//!
//! [`Keys`] hands out typed values with defaults and bounds, remembers which keys were
//! read, and at the end rejects any key nobody read — so a typo is an error naming the
//! key and the keys the model accepts. [`build`] dispatches on `model`.

use toml::{Table, Value};

use super::BlockDevice;
use crate::error::KeyError;

/// The `[device]` table and the scenario seed.
pub struct DeviceConfig<'a> {
    pub table: &'a Table,
    pub seed: u64,
}

/// Typed, tracked access to a `[device]` table.
pub struct Keys<'a> {
    cfg: &'a DeviceConfig<'a>,
    model: &'static str,
    used: Vec<&'static str>,
}

impl<'a> Keys<'a> {
    pub fn new(cfg: &'a DeviceConfig<'a>, model: &'static str) -> Self {
        Keys {
            cfg,
            model,
            used: vec!["model"],
        }
    }

    pub fn err(&self, key: &str, msg: impl Into<String>) -> KeyError {
        KeyError::new(format!("device.{key}"), msg)
    }

    fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.used.push(key);
        self.cfg.table.get(key)
    }

    /// An unsigned integer in [lo, hi], `def` when absent.
    pub fn int(&mut self, key: &'static str, def: u64, lo: u64, hi: u64) -> Result<u64, KeyError> {
        match self.get(key) {
            None => Ok(def),
            Some(Value::Integer(i)) if *i >= 0 && (*i as u64) >= lo && (*i as u64) <= hi => {
                Ok(*i as u64)
            }
            Some(Value::Integer(_)) => {
                Err(self.err(key, format!("must be an integer in [{lo}, {hi}]")))
            }
            Some(_) => Err(self.err(key, format!("must be an integer in [{lo}, {hi}]"))),
        }
    }

    /// A number (integer or float) in [lo, hi].
    pub fn num(&mut self, key: &'static str, def: f64, lo: f64, hi: f64) -> Result<f64, KeyError> {
        let v = match self.get(key) {
            None => return Ok(def),
            Some(Value::Integer(i)) => *i as f64,
            Some(Value::Float(f)) => *f,
            Some(_) => return Err(self.err(key, format!("must be a number in [{lo}, {hi}]"))),
        };
        if v.is_finite() && v >= lo && v <= hi {
            Ok(v)
        } else {
            Err(self.err(key, format!("must be a number in [{lo}, {hi}]")))
        }
    }

    pub fn string(&mut self, key: &'static str) -> Result<Option<&'a str>, KeyError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(key, "must be a string")),
        }
    }

    /// `dev = "MAJ:MIN"`.
    pub fn dev(&mut self, def: (u32, u32)) -> Result<(u32, u32), KeyError> {
        let Some(s) = self.string("dev")? else {
            return Ok(def);
        };
        let parsed = s
            .split_once(':')
            .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
        parsed.ok_or_else(|| self.err("dev", format!("`{s}` is not MAJ:MIN (e.g. \"8:0\")")))
    }

    /// `name`, the /sys/block name.
    pub fn name(&mut self, def: &str) -> Result<String, KeyError> {
        Ok(self.string("name")?.unwrap_or(def).to_string())
    }

    /// `scheduler`: only `none` is modelled.
    pub fn scheduler(&mut self) -> Result<(), KeyError> {
        match self.string("scheduler")? {
            None | Some("none") => Ok(()),
            Some(s) => Err(self.err(
                "scheduler",
                format!("`{s}` is not modelled yet; accepted: \"none\""),
            )),
        }
    }

    /// Reject keys nobody read.
    pub fn finish(self) -> Result<(), KeyError> {
        for k in self.cfg.table.keys() {
            if !self.used.contains(&k.as_str()) {
                let mut accepted: Vec<&str> = self
                    .used
                    .iter()
                    .copied()
                    .filter(|u| *u != "model")
                    .collect();
                accepted.sort_unstable();
                accepted.dedup();
                return Err(self.err(
                    k,
                    format!(
                        "unknown key for model `{}`; accepted: {}",
                        self.model,
                        accepted.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Models `build` knows.
pub const MODELS: &[&str] = &["nullb"];

/// Build the device a `[device]` table describes.
pub fn build(table: &Table, seed: u64) -> Result<Box<dyn BlockDevice>, KeyError> {
    let cfg = DeviceConfig { table, seed };
    let model = match table.get("model") {
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(KeyError::new("device.model", "must be a string")),
        None => {
            return Err(KeyError::new(
                "device.model",
                format!("missing; accepted: {}", MODELS.join(", ")),
            ));
        }
    };
    match model {
        "nullb" => Ok(Box::new(super::nullb::NullBlk::from_config(&cfg)?)),
        m => Err(KeyError::new(
            "device.model",
            format!("unknown model `{m}`; accepted: {}", MODELS.join(", ")),
        )),
    }
}
