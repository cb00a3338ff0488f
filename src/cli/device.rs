//! `blkcg-sim device …`: a device model on its own. `device plot` draws its pictures
//! (the work is `crate::report::device_plot`'s); this file picks the devices from the
//! command line and prints what was written.

use std::path::Path;

use crate::cli::load;
use crate::report::device_plot::{DeviceUnderTest, builtin_devices, plot_device};

/// What `device plot` draws: exactly one of these.
pub struct PlotWhat<'a> {
    pub scenario: Option<&'a str>,
    pub preset: Option<&'a str>,
    pub model: Option<&'a str>,
    pub all: bool,
}

/// `blkcg-sim device plot`: every picture that applies to each chosen device, in
/// `output`; the latency-vs-load table of each on stdout.
pub fn plot_command(
    what: &PlotWhat,
    output: &Path,
    runtime_s: u64,
    cliff_s: u64,
) -> Result<u8, String> {
    let given = [
        what.scenario.is_some(),
        what.preset.is_some(),
        what.model.is_some(),
        what.all,
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(
            "device plot: name one device: a SCENARIO (its [device]), --preset NAME, --model SPEC, or --all"
                .into(),
        );
    }
    let devices = if let Some(s) = what.scenario {
        vec![DeviceUnderTest::from_scenario(&load(s)?)?]
    } else if let Some(p) = what.preset {
        vec![DeviceUnderTest::from_preset(p)?]
    } else if let Some(m) = what.model {
        vec![DeviceUnderTest::from_spec(m)?]
    } else {
        builtin_devices()
    };
    std::fs::create_dir_all(output).map_err(|e| format!("{}: {e}", output.display()))?;
    for d in &devices {
        let (table, files) = plot_device(d, output, runtime_s, cliff_s)?;
        println!("== {}", d.name);
        print!("{table}");
        for f in files {
            println!("wrote {f}");
        }
    }
    Ok(0)
}
