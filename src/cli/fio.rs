//! `blkcg-sim fio`: fio's own arguments against a simulated device, as a one-cgroup
//! scenario read as fio reads it. The scenario is [generated](Scenario::generated):
//! an error names the argument behind the key (``--device `cloud:bps=x` ``,
//! `--io-max`, `--kernel`; fio's `<cmdline>:N` for the Nth fio argument), never a
//! line of the text written here.

use crate::cli::run::{OutputFormat, RunOptions, run_command};
use crate::progress::Reporter;
use crate::run::VariantRun;
use crate::scenario::Scenario;
use crate::scenario::source::{Place, Places};
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
    let mut places = Places::default();
    let mut t = toml::Table::new();
    t.insert("device".into(), toml::Value::Table(dev));
    places.set(&["device"], Place::argument(format!("--device `{device}`")));
    let mut cg = toml::Table::new();
    let mut words = vec!["fio".to_string()];
    words.extend(args.iter().map(|a| shell_quote(a)));
    cg.insert("fio".into(), toml::Value::String(words.join(" ")));
    places.set(&["cgroup", "fio", "fio"], Place::argument("<cmdline>"));
    if let Some(m) = io_max {
        cg.insert("io.max".into(), toml::Value::String(m.to_string()));
        places.set(
            &["cgroup", "fio", "io.max"],
            Place::argument(format!("--io-max `{m}`")),
        );
    }
    let mut cgs = toml::Table::new();
    cgs.insert("fio".into(), toml::Value::Table(cg));
    t.insert("cgroup".into(), toml::Value::Table(cgs));
    if let Some(k) = kernel {
        let mut kt = toml::Table::new();
        kt.insert("version".into(), toml::Value::String(k.to_string()));
        t.insert("kernel".into(), toml::Value::Table(kt));
        places.set(&["kernel"], Place::argument(format!("--kernel `{k}`")));
    }
    let mut sc = Scenario::generated(&t, "<command line>", &places)?;
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
