//! The `[sysctl]` table of a scenario: the kernel's `vm.*` writeback sysctls, by
//! their `/proc/sys` names (`vm.dirty_ratio = 10`, or `[sysctl.vm] dirty_ratio = 10`),
//! checked as their handlers in `mm/page-writeback.c` check them: the ranges
//! (`EINVAL` outside), and a ratio and its byte twin are one setting — writing one
//! zeroes the other (`dirty_ratio_handler()`, `dirty_bytes_handler()`, and the
//! background pair), so a scenario may set only one of each pair.

use toml::Value;

use super::{Scenario, ScenarioError};
use crate::writeback::VmWriteback;

/// The `vm.*` sysctls a scenario may set, with what each accepts.
const VM_KEYS: &[(&str, &str)] = &[
    ("dirty_ratio", "0 to 100 (percent of dirtyable memory)"),
    ("dirty_bytes", "0, or at least 8192 (two pages)"),
    (
        "dirty_background_ratio",
        "0 to 100 (percent of dirtyable memory)",
    ),
    ("dirty_background_bytes", "0 or more bytes"),
    ("dirty_expire_centisecs", "0 to 2147483647"),
    (
        "dirty_writeback_centisecs",
        "0 to 2147483647 (0: no periodic writeback)",
    ),
];

impl Scenario {
    /// `[sysctl]`: the writeback sysctls over the kernel's defaults.
    pub(super) fn sysctls(&self, v: Option<&Value>) -> Result<VmWriteback, ScenarioError> {
        let mut vm = VmWriteback::default();
        let Some(v) = v else {
            return Ok(vm);
        };
        let Some(t) = v.as_table() else {
            return Err(self.err_at(&[], "sysctl", "`sysctl` must be a table: [sysctl]"));
        };
        // `vm.dirty_ratio = 10` is a table `vm`; `"vm.dirty_ratio" = 10` one key
        let mut set: Vec<(&str, &str, &Value)> = Vec::new();
        for (k, val) in t {
            match (k.as_str(), val) {
                ("vm", Value::Table(vt)) => {
                    set.extend(vt.iter().map(|(n, x)| (n.as_str(), k.as_str(), x)))
                }
                (k, x) if k.starts_with("vm.") => set.push((&k[3..], "", x)),
                (k, x) => {
                    // `kernel.hz = 10` is a table `kernel`: name its key
                    let name = match x.as_table().and_then(|t| t.keys().next()) {
                        Some(first) => format!("{k}.{first}"),
                        None => k.to_string(),
                    };
                    return Err(self.err_at(
                        &["sysctl"],
                        k,
                        format!("unknown sysctl `{name}`; accepted: {}", accepted()),
                    ));
                }
            }
        }
        let at = |name: &str, table: &str| -> Vec<String> {
            if table.is_empty() {
                vec!["sysctl".into(), format!("vm.{name}")]
            } else {
                vec!["sysctl".into(), "vm".into(), name.into()]
            }
        };
        let err = |name: &str, table: &str, msg: String| {
            let path = at(name, table);
            let refs: Vec<&str> = path.iter().map(String::as_str).collect();
            self.err_at(&refs[..refs.len() - 1], refs[refs.len() - 1], msg)
        };
        let names: Vec<&str> = set.iter().map(|s| s.0).collect();
        for pair in [
            ("dirty_ratio", "dirty_bytes"),
            ("dirty_background_ratio", "dirty_background_bytes"),
        ] {
            if names.contains(&pair.0) && names.contains(&pair.1) {
                let table = set.iter().find(|s| s.0 == pair.1).map_or("", |s| s.1);
                return Err(err(
                    pair.1,
                    table,
                    format!(
                        "`vm.{}` and `vm.{}` are one setting (writing one zeroes the other); \
                         set one of them",
                        pair.0, pair.1
                    ),
                ));
            }
        }
        for (name, table, val) in set {
            let Some(&(_, accepts)) = VM_KEYS.iter().find(|k| k.0 == name) else {
                return Err(err(
                    name,
                    table,
                    format!("unknown sysctl `vm.{name}`; accepted: {}", accepted()),
                ));
            };
            let n = val.as_integer().and_then(|i| u64::try_from(i).ok());
            let ok = |max: u64, min: u64| n.filter(|&n| n == 0 || (min..=max).contains(&n));
            let value = match name {
                "dirty_ratio" | "dirty_background_ratio" => ok(100, 0),
                "dirty_bytes" => ok(u64::MAX, 8192),
                "dirty_background_bytes" => ok(u64::MAX, 1),
                _ => ok(i32::MAX as u64, 0),
            };
            let Some(value) = value else {
                return Err(err(
                    name,
                    table,
                    format!(
                        "`vm.{name}` = {val}: the kernel refuses it (EINVAL); accepted: {accepts}"
                    ),
                ));
            };
            let d = &mut vm.dirty;
            match name {
                "dirty_ratio" => (d.dirty_ratio, d.dirty_bytes) = (value, 0),
                "dirty_bytes" => (d.dirty_bytes, d.dirty_ratio) = (value, 0),
                "dirty_background_ratio" => {
                    (d.dirty_background_ratio, d.dirty_background_bytes) = (value, 0)
                }
                "dirty_background_bytes" => {
                    (d.dirty_background_bytes, d.dirty_background_ratio) = (value, 0)
                }
                "dirty_expire_centisecs" => vm.dirty_expire_centisecs = value,
                _ => vm.dirty_writeback_centisecs = value,
            }
        }
        Ok(vm)
    }
}

fn accepted() -> String {
    VM_KEYS
        .iter()
        .map(|(k, _)| format!("vm.{k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The table's keys as `check` prints them (the non-default ones), for the summary.
pub fn describe(vm: &VmWriteback) -> String {
    let d = &vm.dirty;
    let limit = if d.dirty_bytes > 0 {
        format!("vm.dirty_bytes={}", d.dirty_bytes)
    } else {
        format!("vm.dirty_ratio={}", d.dirty_ratio)
    };
    let bg = if d.dirty_background_bytes > 0 {
        format!("vm.dirty_background_bytes={}", d.dirty_background_bytes)
    } else {
        format!("vm.dirty_background_ratio={}", d.dirty_background_ratio)
    };
    format!(
        "{limit} {bg} vm.dirty_expire_centisecs={} vm.dirty_writeback_centisecs={}",
        vm.dirty_expire_centisecs, vm.dirty_writeback_centisecs
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(text: &str) -> Result<VmWriteback, ScenarioError> {
        let sc = Scenario::parse(text, "s.toml").unwrap();
        sc.sysctls(sc.table.get("sysctl"))
    }

    #[test]
    fn both_spellings_set_the_sysctls() {
        let v =
            vm("[sysctl]\nvm.dirty_ratio = 5\n\"vm.dirty_background_bytes\" = 1048576\n").unwrap();
        assert_eq!(v.dirty.dirty_ratio, 5);
        assert_eq!(v.dirty.dirty_background_bytes, 1_048_576);
        assert_eq!(v.dirty.dirty_background_ratio, 0);
        let v = vm("[sysctl.vm]\ndirty_writeback_centisecs = 0\n").unwrap();
        assert_eq!(v.dirty_writeback_centisecs, 0);
    }

    #[test]
    fn what_the_kernel_refuses_is_refused_with_its_line() {
        let e = vm("seed = 1\n[sysctl]\nvm.dirty_ratio = 101\n").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(
            e.msg.contains("EINVAL") && e.msg.contains("0 to 100"),
            "{}",
            e.msg
        );
        let e = vm("[sysctl]\nvm.dirty_bytes = 4096\n").unwrap_err();
        assert!(e.msg.contains("8192"), "{}", e.msg);
        let e = vm("[sysctl]\nvm.dirty_ratio = 10\nvm.dirty_bytes = 1048576\n").unwrap_err();
        assert!(e.msg.contains("one setting"), "{}", e.msg);
        let e = vm("[sysctl]\nvm.swappiness = 10\n").unwrap_err();
        assert!(e.msg.contains("accepted: vm.dirty_ratio"), "{}", e.msg);
        let e = vm("[sysctl]\nkernel.hz = 10\n").unwrap_err();
        assert!(e.msg.contains("unknown sysctl `kernel.hz`"), "{}", e.msg);
    }
}
