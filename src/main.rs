//! The `blkcg-sim` command line: run scenarios, act as fio against a simulated device,
//! check scenarios, and reproduce the seed experiments.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use blkcg_sim::progress::Reporter;
use blkcg_sim::scenario::run::{self, OutputFormat, RunOptions};
use blkcg_sim::scenario::{Scenario, embedded};
use blkcg_sim::validate;

#[derive(Parser)]
#[command(
    name = "blkcg-sim",
    version,
    about = "Simulate Linux cgroup v2 block I/O controllers (io.max, io.cost) driven by fio jobs",
    long_about = "blkcg-sim runs fio jobs in cgroups against a simulated block device and \
the kernel's blk-throttle (io.max) and blk-iocost (io.cost.qos, io.cost.model, io.weight) \
controllers, in simulated time: a 60-second experiment takes well under a second, and the \
same scenario and seed always give byte-identical output.\n\n\
It prints what fio would print (normal text, json, json+), an iostat-like device timeline, \
the controllers' internals, and a summary table. Kernel behaviour that changed between \
versions is selected with kernel.version (e.g. \"4.18\", \"6.10\") or one named switch at a time.\n\n\
Start with:\n  blkcg-sim scenarios                 list the scenarios built into the binary\n  \
blkcg-sim repro                     reproduce the seed kernel patches beside their published numbers\n  \
blkcg-sim run throttle-iops-tail-latency --variant after\n  \
blkcg-sim fio --device nullb --name=a --rw=randread --bs=4k --iodepth=8 --runtime=5 --time_based"
)]
struct Cli {
    /// No progress on stderr (by default: a bar on a terminal, else a status line every
    /// few seconds once a run has taken more than a few seconds).
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// fio's normal text output, then the summary table
    Normal,
    /// one fio JSON document per variant (exactly fio's layout)
    Json,
    /// fio JSON with latency histogram bins
    #[value(name = "json+")]
    JsonPlus,
    /// only the seeds' summary table (CGROUP IOPS MB/s slat clat ...)
    Summary,
}

impl From<Format> for OutputFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Normal => OutputFormat::Normal,
            Format::Json => OutputFormat::Json,
            Format::JsonPlus => OutputFormat::JsonPlus,
            Format::Summary => OutputFormat::Summary,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum ReproFormat {
    Table,
    Json,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario (a .toml file, or the name of a built-in scenario).
    ///
    /// All variants run unless --variant picks some. With one variant, --output-format
    /// json prints exactly one fio JSON document holding every job of every cgroup, so
    /// `jq '.jobs[] | select(.jobname=="cgB")'` works. --output DIR writes, per variant,
    /// DIR/<variant>/{fio.json,fio.txt,summary.txt,io.stat,iostat.csv,jobs.csv} and,
    /// with a controller on, timeline.csv, trace.txt (blk-iocost) or throttle.csv, plus
    /// pictures as PNG and SVG: jobs (each job's IOPS and latency over time), clat
    /// (percentiles), iostat, and iocost (vrate, busy_level and hweights over the jobs).
    /// With several variants or kernels the summary ends with an A/B table: each job's
    /// IOPS, bandwidth, slat and clat of every run beside the first run's, with ratios
    /// (also DIR/ab.txt with --output).
    Run {
        scenario: String,
        /// Run only this variant (repeatable).
        #[arg(long)]
        variant: Vec<String>,
        /// A/B kernel versions in one command: one run per --kernel (e.g. --kernel 6.10
        /// --kernel 6.16), each overriding kernel.version of the chosen variants.
        #[arg(long = "kernel")]
        kernel: Vec<String>,
        #[arg(long, value_enum, default_value = "normal")]
        output_format: Format,
        /// Write every output file of every variant under this directory.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Also print the device timeline (iostat -x 1), io.stat and, with blk-iocost,
        /// the iocost_monitor view at the end of the run.
        #[arg(long)]
        timeline: bool,
        /// Log the controllers' events: blk-throttle's blktrace-style `throtl` lines and
        /// blk-iocost's tracepoints (to trace.txt with --output, else to stderr).
        #[arg(long)]
        trace: bool,
    },
    /// Act as fio against a simulated device: `blkcg-sim fio --device SPEC [fio args | jobfile]`.
    ///
    /// SPEC is a model name with optional key=value settings, e.g. `nullb`,
    /// `nullb:irqmode=2,completion_nsec=100000`, `cloud:preset=azure-p20`, `ssd:channels=8`.
    /// The fio arguments are exactly fio's (`--name=a --rw=randread ...` or a job file).
    Fio {
        #[arg(long)]
        device: String,
        /// An io.max line for the job's cgroup (e.g. "252:0 riops=100").
        #[arg(long = "io-max")]
        io_max: Option<String>,
        #[arg(long, value_enum, default_value = "normal")]
        output_format: Format,
        /// Kernel version preset.
        #[arg(long = "kernel")]
        kernel: Option<String>,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        args: Vec<String>,
    },
    /// Validate a scenario and print its resolved configuration (every variant).
    Check {
        scenario: String,
        #[arg(long)]
        variant: Vec<String>,
    },
    /// Reproduce the seed experiments (built in) beside their published numbers.
    ///
    /// Each seed prints the published table, ours, and every tolerance band with
    /// PASS/FAIL. Exit status 1 if any band fails.
    Repro {
        /// Seeds to run (default: all). See `blkcg-sim scenarios`.
        names: Vec<String>,
        #[arg(long, value_enum, default_value = "table")]
        format: ReproFormat,
    },
    /// Run a scenario on a real Linux kernel under qemu, and beside its simulation.
    ///
    /// Boots a Debian kernel (downloaded once with apt-get into ~/.cache/blkcg-sim),
    /// recreates the scenario's null_blk device and cgroups in the guest, writes every
    /// interface line to the real files (a refused write is shown with the kernel's
    /// error), runs the same fio jobs with the real fio inside their cgroups, and prints
    /// real and simulated IOPS, MiB/s, slat/clat means, percentiles and max side by side
    /// with the ratio sim/real; with blk-iocost on, both vrate trajectories too. The
    /// simulation runs with kernel.version and hz of the booted kernel.
    ///
    /// Needs (Debian): apt-get install -y qemu-system-x86 busybox-static fio cpio xz-utils zstd kmod
    /// (checked first: a missing tool stops the run before any download, with the
    /// apt-get line that installs it).
    ///
    /// Example: blkcg-sim validate validate-iomax-riops
    ///
    /// To see what would run in the guest without booting anything:
    /// blkcg-sim validate validate-iomax-riops --dry-run
    Validate {
        scenario: String,
        #[arg(long)]
        variant: Option<String>,
        /// The kernel: a Debian package name (linux-image-6.12.48+deb12-amd64), a .deb,
        /// an unpacked package folder (boot/vmlinuz-*, lib/modules/), or a kernel built
        /// by `blkcg-sim kernel build` (built:KEY, or its folder; the behaviours its
        /// patches declare are pinned in the simulation). Default: the package Debian's
        /// linux-image-amd64 depends on today. Repeatable: one run per kernel, then a
        /// before/after table of every kernel's real and simulated figures (e.g.
        /// --kernel built:STOCK --kernel built:PATCHED).
        #[arg(long = "kernel")]
        kernel: Vec<String>,
        /// Boot this many times to show the real side's run-to-run spread.
        #[arg(long, default_value_t = 1)]
        runs: u32,
        /// The guest's clock: icount (TCG, guest time by instruction count; runs repeat closely)
        /// or realtime (host time; KVM when it works here, else TCG).
        #[arg(long, value_enum, default_value = "icount")]
        timing: TimingArg,
        /// Keep the console captures and both sides' fio JSON in this folder.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Host costs of the simulation: guest (measured in the qemu guest, so the
        /// comparison is of the kernels) or scenario (the scenario's [host], e.g. a
        /// seed's noisy VM).
        #[arg(long, value_enum, default_value = "guest")]
        host: HostArg,
        /// Also record this kernel tracepoint in the guest (SYSTEM:EVENT, repeatable,
        /// e.g. block:block_rq_requeue); the buffer is kept as trace-N.txt with --output.
        #[arg(long = "trace-event")]
        trace_event: Vec<String>,
        /// Print what the guest would run, and boot nothing.
        ///
        /// Prints the kernel at hand, whether the host tools are installed, every file
        /// of the guest's initramfs with where it comes from (busybox, the host's fio and
        /// the libraries ldd lists, the kernel modules, the job files), then the
        /// generated /init script and job files in full. Downloads nothing: when no
        /// kernel is cached yet (or --kernel names none at hand), the module list is
        /// left out and /init loads no modules; the output says so. Use it to see how a
        /// scenario's cgroups, interface lines and fio arguments reach the real kernel,
        /// e.g. `blkcg-sim validate my.toml --dry-run | less`.
        #[arg(long)]
        dry_run: bool,
    },
    /// List the built-in scenarios, or print one (`blkcg-sim scenarios NAME`).
    Scenarios { name: Option<String> },
    /// Kernels built from source for `validate`: build, list, clean.
    #[command(subcommand)]
    Kernel(KernelCmd),
}

#[derive(Subcommand)]
enum KernelCmd {
    /// Build a guest kernel from source, with patches, into the cache.
    ///
    /// Gets the source (Debian's linux-source-X.Y via apt-get download, or a tree, or a
    /// tarball), applies each --patch with `patch -p1` (a hunk that does not apply is
    /// named), configures `make tinyconfig` plus a fragment with what the qemu guest and
    /// validate need (every blk-cgroup policy, null_blk and configfs built in, PVH boot,
    /// serial console, tracepoints), checks after `make olddefconfig` that every option
    /// stuck, and builds with every core. The kernel lands in
    /// ~/.cache/blkcg-sim/builds/KEY ($BLKCG_SIM_CACHE/builds/KEY), keyed by source,
    /// patches and config: the same call again returns at once. Prints the kernel's
    /// path, the build time and the config fragment.
    ///
    /// Needs (Debian): apt-get install -y make gcc bc bison flex libelf-dev libssl-dev
    /// patch (checked first: the missing ones are named).
    ///
    /// Example: blkcg-sim kernel build --source 6.12 --patch fix.patch=iocost.no_completion:keep-if-lagging
    /// then:    blkcg-sim validate validate-iocost-saturated --kernel built:KEY
    Build {
        /// 6.1 or 6.12 (Debian's linux-source-X.Y; default 6.12), a kernel source
        /// folder (read only; must be clean: no .config), or a source tarball.
        #[arg(long)]
        source: Option<String>,
        /// A patch for `patch -p1`, optionally with the simulator behaviours it turns
        /// on: FILE=SWITCH:VALUE[,SWITCH:VALUE...], e.g.
        /// fix.patch=iocost.no_completion:keep-if-lagging. Repeatable, applied in order.
        #[arg(long = "patch")]
        patch: Vec<String>,
        /// A Kconfig option on top of the guest fragment, KEY=VAL (CONFIG_ optional),
        /// e.g. BLK_DEV_THROTTLING_LOW=y or HZ_1000=y. Repeatable.
        #[arg(long = "config")]
        config: Vec<String>,
        /// Print the key, whether it is cached, and the fragment; build nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// List the kernels built so far.
    List,
    /// Remove built kernels (by key or unique prefix), or with --all every build and
    /// unpacked source. Only folders blkcg-sim created are removed.
    Clean {
        keys: Vec<String>,
        #[arg(long)]
        all: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum HostArg {
    Guest,
    Scenario,
}

#[derive(Clone, Copy, ValueEnum)]
enum TimingArg {
    Icount,
    Realtime,
}

fn load(name: &str) -> Result<Scenario, String> {
    let p = Path::new(name);
    if p.exists() {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{name}: cannot read: {e}"))?;
        return Scenario::parse(&text, name).map_err(|e| e.to_string());
    }
    if let Some(text) = embedded::get(name.trim_end_matches(".toml")) {
        return Scenario::parse(text, &format!("{name} (built in)")).map_err(|e| e.to_string());
    }
    Err(format!(
        "{name}: no such file, and no built-in scenario of that name; built in: {}",
        embedded::names().join(", ")
    ))
}

fn kernel_command(cmd: KernelCmd, quiet: bool) -> Result<u8, String> {
    use validate::build;
    match cmd {
        KernelCmd::Build {
            source,
            patch,
            config,
            dry_run,
        } => {
            let o = build::BuildOptions {
                source,
                patches: patch,
                config,
                dry_run,
                quiet,
            };
            if o.dry_run {
                print!("{}", build::dry_run(&o)?);
            } else {
                print!("{}", build::build(&o)?.report());
            }
            Ok(0)
        }
        KernelCmd::List => {
            let all = build::list();
            if all.is_empty() {
                println!("no kernels built yet in {}", build::builds_dir().display());
            }
            for (dir, r) in all {
                match r {
                    Ok(r) => println!(
                        "built:{}  {}  ({} s with -j{})",
                        r.key,
                        r.summary(),
                        r.build_seconds,
                        r.jobs
                    ),
                    Err(e) => println!("{}: unreadable record: {e}", dir.display()),
                }
            }
            Ok(0)
        }
        KernelCmd::Clean { keys, all } => {
            if keys.is_empty() && !all {
                return Err("kernel clean: name builds (KEY...) or pass --all".into());
            }
            for d in build::clean(&keys, all)? {
                println!("removed {}", d.display());
            }
            Ok(0)
        }
    }
}

fn main() -> ExitCode {
    // `blkcg-sim ... | head` ends quietly, as any Unix tool does, instead of panicking
    // on the closed pipe: Rust ignores SIGPIPE by default.
    // SAFETY: restoring the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let progress = Reporter::for_stderr(cli.quiet);
    let result = match cli.cmd {
        Cmd::Run {
            scenario,
            variant,
            kernel,
            output_format,
            output,
            seed,
            timeline,
            trace,
        } => load(&scenario).and_then(|sc| {
            let opts = RunOptions {
                variants: variant,
                kernels: kernel,
                format: output_format.into(),
                output,
                seed,
                timeline,
                progress,
                trace,
            };
            run::run_command(&sc, &opts)
        }),
        Cmd::Fio {
            device,
            io_max,
            output_format,
            kernel,
            args,
        } => run::fio_command(
            &device,
            io_max.as_deref(),
            kernel.as_deref(),
            &args,
            output_format.into(),
            progress,
        ),
        Cmd::Check { scenario, variant } => {
            load(&scenario).and_then(|sc| run::check_command(&sc, &variant))
        }
        Cmd::Repro { names, format } => {
            run::repro_command(&names, matches!(format, ReproFormat::Json), &progress)
        }
        Cmd::Validate {
            scenario,
            variant,
            kernel,
            runs,
            timing,
            output,
            host,
            trace_event,
            dry_run,
        } => load(&scenario).and_then(|sc| {
            let opts = validate::ValidateOptions {
                variant,
                kernels: kernel,
                runs,
                timing: match timing {
                    TimingArg::Icount => validate::Timing::Icount,
                    TimingArg::Realtime => validate::Timing::Realtime,
                },
                output,
                host: match host {
                    HostArg::Guest => validate::HostProfile::Guest,
                    HostArg::Scenario => validate::HostProfile::Scenario,
                },
                trace_events: trace_event,
                dry_run,
            };
            validate::validate_command(&sc, &opts)
        }),
        Cmd::Kernel(k) => kernel_command(k, cli.quiet),
        Cmd::Scenarios { name } => match name {
            None => {
                for n in embedded::names() {
                    let sc = embedded::get(n).and_then(|t| Scenario::parse(t, n).ok());
                    let about = sc
                        .and_then(|s| {
                            s.table
                                .get("description")
                                .and_then(|d| d.as_str())
                                .map(|d| d.lines().next().unwrap_or("").to_string())
                        })
                        .unwrap_or_default();
                    println!("{n:<32} {about}");
                }
                Ok(0)
            }
            Some(n) => match embedded::get(&n) {
                Some(t) => {
                    print!("{t}");
                    Ok(0)
                }
                None => Err(format!(
                    "no built-in scenario `{n}`; built in: {}",
                    embedded::names().join(", ")
                )),
            },
        },
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("blkcg-sim: {e}");
            ExitCode::from(2)
        }
    }
}
