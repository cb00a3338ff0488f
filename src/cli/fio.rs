//! `blkcg-sim fio`: fio's own arguments against a simulated device, as a one-cgroup
//! scenario read as fio reads it.

use crate::cli::run::{OutputFormat, RunOptions, run_command};
use crate::progress::Reporter;
use crate::run::VariantRun;
use crate::scenario::Scenario;
use crate::scenario::spec::parse_device_spec;
use crate::workload::cmdline::shell_quote;

/// `blkcg-sim fio`: fio's own arguments against a simulated device; the run handed
/// back as `run_command` hands its runs.
pub fn fio_command(
    device: &str,
    io_max: Option<&str>,
    kernel: Option<&str>,
    args: &[String],
    format: OutputFormat,
    progress: Reporter,
) -> Result<Vec<VariantRun>, String> {
    let dev = parse_device_spec(device)?;
    let mut t = toml::Table::new();
    t.insert("device".into(), toml::Value::Table(dev));
    let mut cg = toml::Table::new();
    let mut words = vec!["fio".to_string()];
    words.extend(args.iter().map(|a| shell_quote(a)));
    cg.insert("fio".into(), toml::Value::String(words.join(" ")));
    if let Some(m) = io_max {
        cg.insert("io.max".into(), toml::Value::String(m.to_string()));
    }
    let mut cgs = toml::Table::new();
    cgs.insert("fio".into(), toml::Value::Table(cg));
    t.insert("cgroup".into(), toml::Value::Table(cgs));
    if let Some(k) = kernel {
        let mut kt = toml::Table::new();
        kt.insert("version".into(), toml::Value::String(k.to_string()));
        t.insert("kernel".into(), toml::Value::Table(kt));
    }
    let text = toml::to_string(&t).map_err(|e| e.to_string())?;
    let mut sc = Scenario::parse(&text, "<command line>").map_err(|e| e.to_string())?;
    sc.acting_as_fio = true;
    let opts = RunOptions {
        variants: vec![],
        kernels: vec![],
        format,
        output: None,
        seed: None,
        timeline: false,
        progress,
        trace: false,
    };
    run_command(&sc, &opts)
}
