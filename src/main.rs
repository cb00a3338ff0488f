//! The `blkcg-sim` command line: run scenarios, act as fio against a simulated device,
//! check scenarios, and reproduce the seed experiments.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use blkcg_sim::cli::run::{OutputFormat, RunOptions};
use blkcg_sim::cli::{self, load};
use blkcg_sim::progress::Reporter;
use blkcg_sim::sweep;
use blkcg_sim::validate;

#[derive(Parser)]
#[command(
    name = "blkcg-sim",
    version,
    about = "Simulate Linux cgroup v2 block I/O control (io.max, io.cost, io.weight, io.latency, \
io.prio.class, mq-deadline) driven by fio jobs",
    long_about = "blkcg-sim runs fio jobs in cgroups against a simulated block device and \
the kernel's block I/O controllers, in simulated time: a 60-second experiment takes well \
under a second, and the same scenario and seed always give byte-identical output.\n\n\
Controllers and the elevator, each where Linux calls it:\
\n  blk-throttle   io.max (rbps, wbps, riops, wiops)\
\n  blk-iocost     io.cost.model and io.cost.qos (root), io.weight\
\n  blk-iolatency  io.latency\
\n  blk-ioprio     io.prio.class (and fio's prio, prioclass, cmdprio)\
\n  wbt            writeback throttling of buffered writes: [device] wbt_lat_usec\
\n  mq-deadline    the I/O scheduler: [device] scheduler = \"mq-deadline\" (or \"none\"), \
[device.iosched] for its queue/iosched files\
\n  bfq            the I/O scheduler with weights: [device] scheduler = \"bfq\", io.bfq.weight, \
[device.iosched] for its queue/iosched files\n\n\
Device models, [device] model = ...:\
\n  nullb          null_blk as configured through configfs\
\n  ssd            parallel service (mode = \"simple\"), or flash with a translation layer \
and its garbage-collection cliff (mode = \"ftl\", presets)\
\n  hdd            seek, rotation and transfer on one actuator\
\n  cloud          a cloud volume's IOPS and bandwidth token buckets, optional latency tails \
(presets: azure-p20, aws-gp3, gcp-pd-ssd, ...)\n\n\
It prints what fio would print (normal text, json, json+), an iostat-like device timeline, \
the controllers' internals, and a summary table. Kernel behaviour that changed between \
versions is selected with kernel.version (e.g. \"4.18\", \"6.10\", or a distribution's kernel: \
\"debian-12\", \"debian-13\", \"ubuntu-24.04\", which also set HZ) or one named switch at a time; \
without it a run is the newest upstream at HZ=1000, and every run says what it assumed.\n\n\
Start with:\n  blkcg-sim scenarios                 list the scenarios built into the binary\n  \
blkcg-sim repro                     reproduce the seed kernel patches beside their published numbers\n  \
blkcg-sim run throttle-iops-tail-latency --variant after\n  \
blkcg-sim fio --device nullb --name=a --rw=randread --bs=4k --iodepth=8 --runtime=5 --time_based

Environment:
  BLKCG_SIM_CACHE  where validate and kernel build keep kernels (default: $XDG_CACHE_HOME/blkcg-sim, else $HOME/.cache/blkcg-sim)
  XDG_CACHE_HOME   see BLKCG_SIM_CACHE
  HOME             see BLKCG_SIM_CACHE
  PATH             where validate and kernel build find their tools (qemu, fio, make, ...)
  ${VAR}           in `blkcg-sim fio`'s arguments and job files: any, as fio expands it (scenario files read no environment)"
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
    /// only the seeds' summary table (CGROUP IOPS MiB/s slat(ms) clat(ms) ... P99.99(ms))
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
    /// DIR/<variant>/{fio.json,fio.txt,summary.txt,io.stat,io.pressure,iostat.csv,jobs.csv}
    /// (io.pressure: every cgroup's, as the file reads at the end) and,
    /// with a controller on, its timeline: throttle.csv (blk-throttle), timeline.csv,
    /// iocost_monitor.txt and iocost_monitor.json (blk-iocost), iolatency.csv
    /// (blk-iolatency), deadline.csv (mq-deadline), bfq.csv (BFQ), writeback.csv (the
    /// page cache) and
    /// wbt.csv (writeback throttling) with buffered writers, pressure.csv (each
    /// cgroup's io.pressure every 2 s, from its first stall); trace.txt with --trace; plus
    /// pictures as PNG and SVG: jobs (each job's IOPS and latency over time), clat
    /// (percentiles), iostat, iocost (vrate, busy_level and hweights over the jobs),
    /// iolatency (windows, depths), deadline (the priority levels' queues), bfq (each
    /// group's share and the idling), writeback
    /// (dirty pages, thresholds, rates), wbt (its limits, windows and steps) and
    /// pressure (each cgroup's io.pressure avg10); and the logs a job's fio options
    /// name (write_iolog, write_lat_log, write_bw_log, write_iops_log).
    /// With several variants or kernels the summary ends with an A/B table: each job's
    /// IOPS, bandwidth, slat and clat of every run beside the first run's, with ratios
    /// (also DIR/ab.txt with --output). DIR/report.html puts it all on one page to open
    /// in a browser, offline: the scenario's description, the A/B table, each run's
    /// summary, interactive charts of every timeline on one zoomable time axis (drag to
    /// zoom them all, hover to read every line at that instant; `#t=A..B` in the address
    /// opens it zoomed), its pictures and links to its files. What each run assumed (kernel version and HZ,
    /// host costs, the device's latency model, and who set each) heads its summary, and
    /// goes to stderr when no summary is printed; then every warning of the run (what
    /// it was given but does not model: mmap runs as direct I/O), as on
    /// stderr.
    Run {
        scenario: String,
        /// Run only this variant (repeatable).
        #[arg(long)]
        variant: Vec<String>,
        /// A/B kernel versions in one command: one run per --kernel (e.g. --kernel 6.10
        /// --kernel 6.16), each overriding kernel.version of the chosen variants. A
        /// distribution's kernel sets HZ too: debian-12 (6.1.192, HZ=250), debian-13
        /// (6.12.117, HZ=250), ubuntu-24.04 (6.8, HZ=1000).
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
        /// blk-iocost's tracepoints (to trace.txt with --output, else to stderr as they
        /// come; with several variants each line is prefixed [variant] and the variants
        /// run one after another, so each trace comes whole and the same every time).
        #[arg(long)]
        trace: bool,
    },
    /// Act as fio against a simulated device: `blkcg-sim fio --device SPEC [fio args | jobfile]`.
    ///
    /// SPEC is a model name with optional key=value settings: nullb (null_blk), ssd
    /// (simple, or mode=ftl with a flash translation layer), hdd, or cloud; e.g. `nullb`,
    /// `nullb:irqmode=2,completion_nsec=100000`, `cloud:preset=azure-p20`, `ssd:channels=8`,
    /// `ssd:preset=dc-nvme`, `hdd:rpm=5400`.
    /// The fio arguments are exactly fio's (`--name=a --rw=randread ...` or a job file);
    /// `${VAR}` in them or in a job file expands from the environment, as in fio.
    /// What fio accepts but blkcg-sim does not model is a warning (a buffered job's
    /// reads, direct=0 being fio's default, run as direct reads; its writes go through
    /// the page cache).
    Fio {
        #[arg(long)]
        device: String,
        /// An io.max line for the job's cgroup (e.g. "252:0 riops=100").
        #[arg(long = "io-max")]
        io_max: Option<String>,
        /// Also honoured among the fio arguments, as fio honours it anywhere (the last
        /// one given wins).
        #[arg(long, value_enum, default_value = "normal")]
        output_format: Format,
        /// Kernel version preset (6.10, newest), or a distribution's kernel (debian-12,
        /// debian-13, ubuntu-24.04).
        #[arg(long = "kernel")]
        kernel: Option<String>,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        args: Vec<String>,
    },
    /// Validate a scenario and print its resolved configuration (every variant).
    ///
    /// Each variant's listing starts with what its run will assume (kernel version and
    /// HZ, host costs, the device's latency model, and who set each), and warns where
    /// it relies on a default no distribution ships: no [kernel] version (the newest
    /// upstream modelled) or no hz (HZ=1000). A distribution's kernel is one line:
    /// [kernel] version = "debian-12" (6.1.192, HZ=250), "debian-13" (6.12.117,
    /// HZ=250) or "ubuntu-24.04" (6.8, HZ=1000); it also leaves out what its config
    /// does (io.latency on all three, io.prio.class on Debian's).
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
    /// Boots a Debian kernel (downloaded once with apt-get into ~/.cache/blkcg-sim:
    /// $BLKCG_SIM_CACHE, else $XDG_CACHE_HOME/blkcg-sim, else $HOME/.cache/blkcg-sim),
    /// recreates the scenario's null_blk device and cgroups in the guest, writes every
    /// interface line to the real files (a refused write is shown with the kernel's
    /// error), runs the same fio jobs with the real fio inside their cgroups, and prints
    /// real and simulated IOPS, MiB/s, slat/clat means, percentiles and max side by side
    /// with the ratio sim/real; with blk-iocost on, both vrate trajectories too. The
    /// simulation runs with kernel.version and hz of the booted kernel.
    ///
    /// Needs (Debian): apt-get install -y qemu-system-x86 busybox-static fio cpio xz-utils zstd kmod
    /// (checked first, on $PATH: a missing tool stops the run before any download, with
    /// the apt-get line that installs it).
    ///
    /// Example: blkcg-sim validate validate-iomax-riops
    ///
    /// To see what would run in the guest without booting anything:
    /// blkcg-sim validate validate-iomax-riops --dry-run
    ///
    /// Differential validation: --random N (instead of a scenario) draws N scenarios
    /// of a --family from a grammar (null_blk modes, hierarchies up to three levels,
    /// io.max, io.cost.*/io.weight, io.latency, mq-deadline, BFQ and io.bfq.weight, fio
    /// jobs, successive fio runs and lines rewritten mid-run), writes them as DIR/scenarios/NNNN-FAMILY.toml
    /// (each one `blkcg-sim validate FILE` alone), validates each as validate FILE
    /// --runs R does (R = 2 unless given; its files in DIR/runs/NNNN-FAMILY/) and
    /// appends one JSON line per scenario to DIR/random.jsonl: per job and direction
    /// every boot's and every seed's IOPS, clat mean, p50 and p99, or the error that
    /// stopped it. At the end DIR/report.txt and report.html judge each simulated
    /// figure against the real boots' range plus a small margin, give the fraction
    /// within per family and figure, and rank the scenarios by disagreement with the
    /// command that reproduces each. The set is the same for the same --random,
    /// --family and --seed; rerunning the command resumes (scenarios random.jsonl
    /// holds are skipped; delete a line to redo it); --shard I/N takes the I-th of N
    /// contiguous slices, for several machines (concatenate their random.jsonl and
    /// rerun the command anywhere for the whole report). --resimulate judges a later
    /// build against the same real boots. With --dry-run: writes and checks the
    /// scenarios, boots nothing.
    ///
    /// Example: blkcg-sim validate --random 20 --family iocost --seed 1 --output camp/
    Validate {
        /// A scenario (file or built-in name); none with --random.
        #[arg(required_unless_present = "random", conflicts_with = "random")]
        scenario: Option<String>,
        /// Draw this many random scenarios and validate each (needs --output).
        #[arg(long, requires = "output", conflicts_with = "variant")]
        random: Option<usize>,
        /// With --random: what the scenarios exercise (throttle: io.max; iocost:
        /// io.cost.model/qos and io.weight; iolatency: io.latency, which needs a kernel
        /// with CONFIG_BLK_CGROUP_IOLATENCY; deadline: mq-deadline tunables,
        /// nr_requests and fio prioclass; mixed: io.max with one of those three; bfq:
        /// BFQ's tunables, io.bfq.weight and fio prioclass, two or three busy groups).
        #[arg(long, default_value = "mixed", requires = "random")]
        family: String,
        /// With --random: the grammar's seed (the same seed, the same scenarios).
        #[arg(long, default_value_t = 1, requires = "random")]
        seed: u64,
        /// With --random: validate the I-th of N contiguous slices of the scenarios
        /// (e.g. 2/4), for splitting a campaign across machines.
        #[arg(long, requires = "random")]
        shard: Option<String>,
        /// With --random: boot nothing; simulate again, with this build, every scenario
        /// random.jsonl holds real runs for (into resimulated.jsonl) and report the
        /// agreement before and after (resimulated.txt, resimulated.html): a fix is
        /// judged against the campaign's own real boots.
        #[arg(long, requires = "random")]
        resimulate: bool,
        #[arg(long)]
        variant: Option<String>,
        /// The kernel: a Debian package name (linux-image-6.12.48+deb12-amd64), a
        /// distribution's kernel (debian-12, debian-13: the newest package of its series
        /// apt knows), a .deb, an unpacked package folder (boot/vmlinuz-*,
        /// lib/modules/), or a kernel built
        /// by `blkcg-sim kernel build` (built:KEY, or its folder; the behaviours its
        /// patches declare are pinned in the simulation). Default: the package Debian's
        /// linux-image-amd64 depends on today. Repeatable: one run per kernel, then a
        /// before/after table of every kernel's real and simulated figures (e.g.
        /// --kernel built:STOCK --kernel built:PATCHED).
        #[arg(long = "kernel")]
        kernel: Vec<String>,
        /// Boot this many times to show the real side's run-to-run spread, and simulate as
        /// many seeds (the scenario's, then the next ones) to show the simulated side's
        /// [default: 1; with --random 2: each figure is judged against the real spread].
        #[arg(long)]
        runs: Option<u32>,
        /// The guest's clock: icount (TCG, guest time by instruction count; runs repeat closely)
        /// or realtime (host time; KVM when it works here, else TCG).
        #[arg(long, value_enum, default_value = "icount")]
        timing: TimingArg,
        /// Keep the console captures and both sides' fio JSON in this folder, and
        /// report.html: the comparison on one page, each sim/real ratio coloured (a
        /// legend says what the colours mean), the real and simulated seconds overlaid.
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
        /// Also record a kprobe in the guest, defined as tracefs's kprobe_events takes
        /// it (repeatable): `p:NAME [MODULE:]FUNCTION [ARG=FETCH ...]` on entry, `r:NAME
        /// ...` on return. A function of the kernel or of a module the scenario loads —
        /// what a tracepoint does not show, at the cost of one event where it fires:
        /// e.g. `p:bfq_expire bfq:bfq_bfqq_expire bfqq=%si reason=%cx` records each
        /// BFQ queue expiration and its reason (`enum bfqq_expiration`; x86-64 passes
        /// the first arguments in %di, %si, %dx, %cx). Its events are lines `NAME:
        /// (FUNCTION+0x..) ARG=VALUE ..` in trace-N.txt (with --output); a definition
        /// the kernel refuses stops the run with the kernel's reason (tracefs's
        /// error_log).
        #[arg(long)]
        kprobe: Vec<String>,
        /// Also record the guest disk's blktrace (ftrace's `blk` tracer): each
        /// request's queue, insert, issue and completion, and the I/O scheduler's own
        /// messages — BFQ logs its decisions there (the queue it serves, budgets,
        /// idling, injection, "too many requests" at a tag limit). Kept as trace-N.txt
        /// with --output. BFQ writes about 20 lines per request: the 32 MiB ring buffer
        /// keeps the last second or so of a busy run (the run says how many events
        /// were lost; printing a full one over the serial console takes some 3
        /// minutes), and the tracing costs the guest's one vCPU time, so a run
        /// bound by it moves (three BFQ readers at depth 8 lost a third of their
        /// reads; two behind a 100 MB/s null_blk cap fell below it): read decisions from
        /// it, compare figures without it — or trace the block tracepoints alone
        /// (--trace-event block:block_rq_issue ...), which cost far less.
        #[arg(long)]
        blktrace: bool,
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
    /// Run a scenario over every combination of values for some of its keys, on every core.
    ///
    /// Each --set KEY=V1,V2,... is an axis; the points are the cartesian product (the first
    /// --set varies slowest), each run with --seeds seeds (the scenario's seed, then the
    /// next ones). A point is exactly the scenario with those values written in by hand:
    /// its run is byte-identical to `blkcg-sim run` of that file. Results stream in point
    /// order as runs finish, byte-identical whatever --jobs: one JSON object per run on
    /// stdout (or CSV rows with --format csv), each with the point's values, its seed and
    /// every job's IOPS, MiB/s, slat and clat means, clat p50/p90/p99/p99.9/max (as fio
    /// buckets them), the totals and, with blk-iocost, the mean vrate.
    ///
    /// KEY (a scenario's own names; NAME is a cgroup's path, TOKEN a key=value word of
    /// the line, OPTION any fio option or alias):
    ///   variant                         the scenario's [[variant]]s (default: all)
    ///   duration                        the run's cap
    ///   device.KEY                      e.g. device.iops, device.preset, device.completion_nsec
    ///   kernel.version | kernel.hz      e.g. kernel.version=6.10,6.16
    ///   kernel.config.NAME              throttling_low, blkcg_debug_stats
    ///   kernel.PREFIX.NAME              a behaviour switch: throttle.*, iocost.*,
    ///                                   iolatency.*, deadline.* (kernel.deadline.prio)
    ///   device.iosched.NAME             an elevator's queue/iosched/ file (fifo_batch)
    ///   host.KEY | state.KEY            e.g. host.submit_ns, host.memory, state.iocost.vrate
    ///   sysctl.vm.NAME                  the writeback sysctls: sysctl.vm.dirty_ratio
    ///   cgroup.NAME.memory.max          a cgroup's memory.max (its dirty limits)
    ///   root.FILE[:TOKEN]               a root file's whole line or one token:
    ///                                   root.io.cost.qos:max=50,100,
    ///                                   root.io.cost.model:rrandiops=3000,3566
    ///   cgroup.NAME.FILE[:TOKEN]        a cgroup file's whole line or one token:
    ///                                   cgroup.batch.io.max:wbps=10485760,max,
    ///                                   cgroup.web.io.weight="default 100,default 300",
    ///                                   cgroup.web.io.latency:target=2000,5000,
    ///                                   cgroup.batch.io.prio.class=idle,restrict-to-be
    ///   cgroup.NAME.fio[:OPTION]        the fio text, or e.g. cgroup.web.fio:iodepth=1,8,32
    ///
    /// Every cgroup file, token, switch prefix and iosched file of every controller
    /// (blk-throttle, blk-iocost, blk-iolatency, blk-ioprio, mq-deadline) is accepted.
    ///
    /// A token is replaced where the line has it, else appended; a fio option is replaced
    /// in every job that writes it (under any spelling), else added for all jobs. Values
    /// are comma-separated (\, for a comma inside one: fio:bs=4k\,64k); ranges from the
    /// shell: --set root.io.cost.qos:max=$(seq -s, 10 10 150). Every key and value is
    /// checked before anything runs, errors naming the key.
    ///
    /// Scale-out: --shard I/N runs the I-th of N contiguous slices (1 <= I <= N; shard 1
    /// alone prints the CSV header), so the shards' outputs concatenate, in order, to
    /// exactly the unsharded output: a Slurm array (--shard $SLURM_ARRAY_TASK_ID/N with
    /// --array=1-N), a Kubernetes Indexed Job (--shard $((JOB_COMPLETION_INDEX+1))/N), GNU
    /// parallel. --output DIR also writes DIR/sweep.jsonl and DIR/sweep.csv as runs finish
    /// (DIR/sweep-I-of-N.* for a shard) and, unsharded, a picture per axis
    /// (DIR/sweep-axis-K.png/svg: each job's IOPS, MiB/s and clat p99 against the axis)
    /// and DIR/report.html (the plan, each axis's figures as interactive charts).
    ///
    /// Example: blkcg-sim sweep iocost-linear-max --set variant=linear,linear-max
    /// --set cgroup.single.fio:bs=4k,16k,64k,256k --seeds 3
    #[command(verbatim_doc_comment)]
    Sweep {
        scenario: String,
        /// KEY=V1,V2,...: an axis (repeatable; see above).
        #[arg(long = "set", value_name = "KEY=V1,V2,...")]
        set: Vec<String>,
        /// Seeds per point: the scenario's seed and the next N-1 (device jitter, random
        /// offsets).
        #[arg(long, default_value_t = 1)]
        seeds: u32,
        /// Worker threads (default: the machine's cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Run only the I-th of N contiguous slices of the runs (1-based).
        #[arg(long, value_name = "I/N")]
        shard: Option<blkcg_sim::sweep::Shard>,
        /// Also write sweep.jsonl, sweep.csv and pictures into this folder.
        #[arg(long)]
        output: Option<PathBuf>,
        /// What stdout shows: JSON lines or CSV.
        #[arg(long, value_enum, default_value = "jsonl")]
        format: SweepFormat,
        /// Print the runs (point, seed index, values), one per line, and run nothing.
        #[arg(long)]
        list: bool,
    },
    /// Answer "what should I write?": from a goal to a setting, or io.cost.* and io.max.
    ///
    /// `tune SCENARIO --goal FIGURE<=VALUE --maximize FIGURE --over KEY=RANGE` searches
    /// sweep keys for the best setting meeting the goals (see below); `tune model` runs
    /// the kernel's tools/cgroup/iocost_coef_gen.py procedure; `tune qos` runs
    /// resctl-bench's iocost-qos/iocost-tune procedure over a scenario's own workloads;
    /// `tune iomax` finds the loosest io.max on a neighbour that keeps a cgroup
    /// isolated. See `blkcg-sim tune <model|qos|iomax> --help`.
    #[command(
        args_conflicts_with_subcommands = true,
        after_long_help = cli::tune::GOAL_HELP
    )]
    Tune(Box<cli::tune::TuneArgs>),
    /// List the built-in scenarios, or print one (`blkcg-sim scenarios NAME`).
    Scenarios { name: Option<String> },
    /// Kernels built from source for `validate`: build, list, clean.
    #[command(subcommand)]
    Kernel(cli::kernel::KernelCmd),
    /// The device models on their own: fit one to your disk's fio measurements
    /// (`device fit`), draw one's behaviour (`device plot`).
    #[command(subcommand)]
    Device(cli::device::DeviceCmd),
    /// The host a run assumes: the built-in profiles (`host list`), or this machine
    /// measured as one (`host probe`).
    #[command(subcommand)]
    Host(cli::host::HostCmd),
    /// Your own block traces: split a machine's blktrace into one fio iolog per
    /// cgroup and a scenario replaying them (`trace split`).
    #[command(subcommand)]
    Trace(cli::trace::TraceCmd),
}

#[derive(Clone, Copy, ValueEnum)]
enum SweepFormat {
    Jsonl,
    Csv,
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

/// Exit status 0 after `run` or `fio`, whose output is all written and flushed: the
/// runs are not freed, the process's exit gives their memory back at once. Freed one
/// allocation at a time, the reports of 100,000 jobs (millions of small strings) took
/// 0.5 s of a 3.6 s run; the library hands the runs back so that this is the binary's
/// decision, not something an embedder inherits.
fn exit_with_runs(runs: Vec<blkcg_sim::run::VariantRun>) -> u8 {
    std::mem::forget(runs);
    0
}

/// The output format of `blkcg-sim fio`: fio reads its program options anywhere on its
/// command line (init.c `parse_cmd_line()`), so an `--output-format` among the fio
/// arguments overrides the one before them, the last given winning as fio's
/// `parse_output_format()` starts over each time.
fn fio_format(before: Format, args: &[String]) -> Result<Format, String> {
    let Some(v) = blkcg_sim::workload::fio::program_option(args, "output-format") else {
        return Ok(before);
    };
    Format::from_str(&v, false).map_err(|_| {
        let accepted: Vec<String> = Format::value_variants()
            .iter()
            .filter_map(|f| f.to_possible_value())
            .map(|p| p.get_name().to_string())
            .collect();
        format!(
            "fio argument `--output-format={v}`: accepted: {} (one of them)",
            accepted.join(", ")
        )
    })
}

/// `validate --random`'s options, checked.
fn random_options(
    n: usize,
    family: &str,
    seed: u64,
    shard: Option<&str>,
    output: Option<PathBuf>,
) -> Result<validate::random::RandomOptions, String> {
    Ok(validate::random::RandomOptions {
        n,
        family: family.parse()?,
        seed,
        output: output.ok_or(
            "validate --random: give --output DIR (the scenarios and random.jsonl go there)",
        )?,
        shard: shard.map(str::parse).transpose()?,
        resimulate: false,
    })
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
            cli::run::run_command(&sc, &opts).map(exit_with_runs)
        }),
        Cmd::Fio {
            device,
            io_max,
            output_format,
            kernel,
            args,
        } => fio_format(output_format, &args)
            .and_then(|format| {
                cli::fio::fio_command(
                    &device,
                    io_max.as_deref(),
                    kernel.as_deref(),
                    &args,
                    format.into(),
                    progress,
                )
            })
            .map(exit_with_runs),
        Cmd::Check { scenario, variant } => {
            load(&scenario).and_then(|sc| cli::check::check_command(&sc, &variant))
        }
        Cmd::Repro { names, format } => {
            cli::repro::repro_command(&names, matches!(format, ReproFormat::Json), &progress)
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
            kprobe,
            blktrace,
            dry_run,
            random,
            family,
            seed,
            shard,
            resimulate,
        } => {
            let opts = validate::ValidateOptions {
                variant,
                kernels: kernel,
                runs: runs.unwrap_or(if random.is_some() { 2 } else { 1 }),
                timing: match timing {
                    TimingArg::Icount => validate::Timing::Icount,
                    TimingArg::Realtime => validate::Timing::Realtime,
                },
                output: output.clone(),
                host: match host {
                    HostArg::Guest => validate::HostSource::Guest,
                    HostArg::Scenario => validate::HostSource::Scenario,
                },
                trace_events: trace_event,
                kprobes: kprobe,
                blktrace,
                dry_run,
                notify: &cli::Stderr,
            };
            let mut out = |text: &str| print!("{text}");
            match (random, scenario) {
                (Some(n), _) => random_options(n, &family, seed, shard.as_deref(), output)
                    .map(|r| validate::random::RandomOptions { resimulate, ..r })
                    .and_then(|r| validate::random::random_command(&r, &opts, &mut out)),
                (None, Some(scenario)) => {
                    load(&scenario).and_then(|sc| validate::validate_command(&sc, &opts, &mut out))
                }
                (None, None) => Err("validate: give a scenario, or --random N".into()),
            }
        }
        Cmd::Sweep {
            scenario,
            set,
            seeds,
            jobs,
            shard,
            output,
            format,
            list,
        } => load(&scenario).and_then(|sc| {
            let opts = cli::sweep::SweepOptions {
                sets: set,
                seeds,
                jobs: jobs.unwrap_or_else(sweep::pool::cores),
                shard,
                output,
                format: match format {
                    SweepFormat::Jsonl => cli::sweep::Format::Jsonl,
                    SweepFormat::Csv => cli::sweep::Format::Csv,
                },
                list,
                progress,
            };
            cli::sweep::sweep_command(&sc, &opts)
        }),
        Cmd::Tune(t) => cli::tune::tune_args_command(*t, progress),
        Cmd::Kernel(k) => cli::kernel::kernel_command(k, cli.quiet),
        Cmd::Device(d) => cli::device::device_command(d),
        Cmd::Trace(t) => cli::trace::trace_command(t),
        Cmd::Host(h) => cli::host::host_command(h, cli.quiet),
        Cmd::Scenarios { name } => cli::scenarios::scenarios_command(name.as_deref()),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("blkcg-sim: {e}");
            ExitCode::from(2)
        }
    }
}
