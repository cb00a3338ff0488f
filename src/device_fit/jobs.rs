//! The fit's fio jobs: the commands `--print-jobs` prints, and recognising a job of a
//! user's fio JSON as one of them from its options (never from its name).

use crate::workload::cmdline::shell_quote;
use crate::workload::fio::{JobSpec, RwMode, parse_cmdline};
use serde_json::{Map, Value};

/// One measurement the fit knows: a pattern, a block size and a depth, one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StdJob {
    /// fio's `rw`.
    pub rw: RwMode,
    pub bs: u64,
    pub iodepth: u32,
}

const fn job(rw: RwMode, bs: u64, iodepth: u32) -> StdJob {
    StdJob { rw, bs, iodepth }
}

/// Every job `--print-jobs` prints, in its order; models name theirs by index.
pub const JOBS: [StdJob; 8] = [
    job(RwMode::RandRead, 4096, 1),
    job(RwMode::RandRead, 4096, 32),
    job(RwMode::RandWrite, 4096, 1),
    job(RwMode::RandWrite, 4096, 32),
    job(RwMode::Read, 128 << 10, 1),
    job(RwMode::Write, 128 << 10, 1),
    job(RwMode::Read, 1 << 20, 32),
    job(RwMode::Write, 1 << 20, 32),
];

/// Indices into [`JOBS`].
pub const RANDREAD_QD1: usize = 0;
pub const RANDREAD_QD32: usize = 1;
pub const RANDWRITE_QD1: usize = 2;
pub const RANDWRITE_QD32: usize = 3;
pub const READ_128K_QD1: usize = 4;
pub const WRITE_128K_QD1: usize = 5;
pub const READ_1M_QD32: usize = 6;
pub const WRITE_1M_QD32: usize = 7;

/// What `--print-jobs` writes into each command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The file or device fio measures.
    pub filename: String,
    /// fio's `size` (the span the jobs use), as written.
    pub size: String,
    /// Seconds per job.
    pub runtime_s: u64,
}

impl StdJob {
    fn rw_name(&self) -> &'static str {
        match self.rw {
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::Read => "read",
            _ => "write",
        }
    }

    fn bs_name(&self) -> String {
        match self.bs {
            b if b >= 1 << 20 => format!("{}m", b >> 20),
            b => format!("{}k", b >> 10),
        }
    }

    /// `randread-4k-qd1`: the job's name in the printed commands and in reports.
    pub fn name(&self) -> String {
        format!("{}-{}-qd{}", self.rw_name(), self.bs_name(), self.iodepth)
    }

    /// The data direction fio reports this job's figures under.
    pub fn dir(&self) -> &'static str {
        if self.rw.reads() { "read" } else { "write" }
    }

    /// The exact fio command, every word shell-quoted.
    pub fn command(&self, t: &Target) -> String {
        let name = self.name();
        let words = [
            "fio".to_string(),
            format!("--name={name}"),
            // fio splits `filename` at ':' (several files) unless escaped
            format!("--filename={}", t.filename.replace(':', "\\:")),
            format!("--size={}", t.size),
            "--direct=1".into(),
            "--ioengine=libaio".into(),
            "--time_based".into(),
            format!("--runtime={}", t.runtime_s),
            format!("--rw={}", self.rw_name()),
            format!("--bs={}", self.bs_name()),
            format!("--iodepth={}", self.iodepth),
            "--numjobs=1".into(),
            "--output-format=json".into(),
            format!("--output={name}.json"),
        ];
        let words: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
        words.join(" ")
    }
}

/// `--print-jobs`: the commands, with what they do to the target.
pub fn print_jobs(t: &Target) -> String {
    let raw = t.filename.starts_with("/dev/");
    let mut s = String::from(
        "# The measurements `blkcg-sim device fit` reads: run these on the disk to fit,\n\
         # then `blkcg-sim device fit *.json --model ssd` (or hdd, cloud).\n",
    );
    s.push_str(&format!(
        "# WARNING: the write jobs overwrite {}{}\n",
        shell_quote(&t.filename),
        if raw {
            ": a raw device; everything on it is destroyed."
        } else {
            " (a test file: on a raw device, /dev/..., they destroy its data)."
        }
    ));
    s.push_str("# --direct=1 needs a file system that supports O_DIRECT (tmpfs does not).\n");
    for j in &JOBS {
        s.push_str(&j.command(t));
        s.push('\n');
    }
    s
}

/// Why a fio job is not one of [`JOBS`], or which it is.
pub fn recognise(spec: &JobSpec, clones: usize) -> Result<usize, String> {
    let d = if spec.rw.reads() { 0 } else { 1 };
    let why = if clones > 1 {
        format!("numjobs={clones} (the fit's jobs run one job: numjobs=1)")
    } else if !spec.direct {
        "direct=0: buffered I/O measures the page cache, not the disk (direct=1)".into()
    } else if spec.bs_min[d] != spec.bs_max[d] || !spec.bssplit[d].is_empty() {
        "mixed block sizes (one bs)".into()
    } else if spec.rate.iter().chain(&spec.rate_iops).any(|&r| r > 0) || spec.thinktime > 0 {
        "rate-limited or thinking (no rate, rate_iops, thinktime)".into()
    } else {
        match JOBS
            .iter()
            .position(|j| j.rw == spec.rw && j.bs == spec.bs_min[d] && j.iodepth == spec.iodepth)
        {
            Some(i) => return Ok(i),
            None => "not one of the fit's jobs (see `blkcg-sim device fit --print-jobs`)".into(),
        }
    };
    Err(why)
}

/// fio's options of one job of a fio JSON document as fio command-line arguments:
/// the global options, `--name`, the job's own (a value-less option bare).
pub fn job_args(global: Option<&Map<String, Value>>, job: &Map<String, Value>) -> Vec<String> {
    let name = job.get("name").and_then(Value::as_str).unwrap_or("job");
    let arg = |(k, v): (&String, &Value)| {
        let v = match v {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        if v.is_empty() {
            format!("--{k}")
        } else {
            format!("--{k}={v}")
        }
    };
    let mut args: Vec<String> = global.into_iter().flatten().map(arg).collect();
    args.push(format!("--name={name}"));
    args.extend(job.iter().filter(|(k, _)| k.as_str() != "name").map(arg));
    args
}

/// The job `args` describe (the first, and how many `numjobs` made).
pub fn job_spec(args: &[String]) -> Result<(JobSpec, usize), String> {
    let jobs = parse_cmdline(args).map_err(|e| e.msg)?;
    let n = jobs.jobs.len();
    let first = jobs.jobs.into_iter().next().ok_or("no job")?;
    Ok((first, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target {
            filename: "/tmp/my disk".into(),
            size: "1G".into(),
            runtime_s: 5,
        }
    }

    #[test]
    fn printed_commands_quote_and_recognise_themselves() {
        let t = target();
        let text = print_jobs(&t);
        assert!(text.contains(" '--filename=/tmp/my disk' "), "{text}");
        assert!(text.contains("destroy its data"));
        for (i, j) in JOBS.iter().enumerate() {
            let line = j.command(&t);
            let words = crate::workload::cmdline::split_shell_words(&line).unwrap();
            let (spec, n) = job_spec(&words[1..]).unwrap();
            assert_eq!(recognise(&spec, n), Ok(i), "{line}");
            assert_eq!(spec.filename.as_deref(), Some("/tmp/my disk"));
        }
        let colon = Target {
            filename: "/dev/disk/by-path/pci-0000:00:04.0".into(),
            ..t.clone()
        };
        assert!(JOBS[0].command(&colon).contains("pci-0000\\:00\\:04.0'"));
        let raw = Target {
            filename: "/dev/sdb".into(),
            ..t
        };
        assert!(print_jobs(&raw).contains("a raw device; everything on it is destroyed"));
    }

    #[test]
    fn jobs_are_told_apart_by_options_not_names() {
        let opts = |s: &str| -> Map<String, Value> { serde_json::from_str(s).unwrap() };
        let global = opts(r#"{"direct": "1", "ioengine": "libaio"}"#);
        let job = opts(
            r#"{"name": "read-1m-qd32", "readwrite": "randwrite", "blocksize": "4k", "iodepth": "32"}"#,
        );
        let (spec, n) = job_spec(&job_args(Some(&global), &job)).unwrap();
        assert_eq!(recognise(&spec, n), Ok(RANDWRITE_QD32));
        let buffered = opts(r#"{"name": "x", "rw": "randread", "bs": "4k"}"#);
        let (spec, n) = job_spec(&job_args(None, &buffered)).unwrap();
        assert!(recognise(&spec, n).unwrap_err().contains("direct=0"));
        let four = opts(r#"{"name": "x", "rw": "randread", "direct": "1", "numjobs": "4"}"#);
        let (spec, n) = job_spec(&job_args(None, &four)).unwrap();
        assert!(recognise(&spec, n).unwrap_err().contains("numjobs=4"));
        // fio's JSON writes a flag option with an empty value
        let flag =
            opts(r#"{"name": "x", "rw": "read", "bs": "128k", "direct": "1", "time_based": ""}"#);
        let (spec, n) = job_spec(&job_args(None, &flag)).unwrap();
        assert_eq!(recognise(&spec, n), Ok(READ_128K_QD1));
    }
}
