//! (being written: glue from a resolved scenario to the pipeline and the reports)
use std::path::PathBuf;

use super::Scenario;

#[derive(Debug, Clone, Copy)]
pub enum OutputFormat {
    Normal,
    Json,
    JsonPlus,
    Summary,
}

pub struct RunOptions {
    pub variants: Vec<String>,
    pub kernels: Vec<String>,
    pub format: OutputFormat,
    pub output: Option<PathBuf>,
    pub seed: Option<u64>,
    pub timeline: bool,
    pub progress: bool,
}

pub fn run_command(_sc: &Scenario, _o: &RunOptions) -> Result<u8, String> {
    Err("not yet".into())
}
pub fn fio_command(
    _d: &str,
    _m: Option<&str>,
    _k: Option<&str>,
    _a: &[String],
    _f: OutputFormat,
) -> Result<u8, String> {
    Err("not yet".into())
}
pub fn check_command(_sc: &Scenario, _v: &[String]) -> Result<u8, String> {
    Err("not yet".into())
}
pub fn repro_command(_n: &[String], _json: bool, _p: bool) -> Result<u8, String> {
    Err("not yet".into())
}
