//! `blkcg-sim kernel ...`: kernels built from source for `validate`, as a clap
//! subcommand group ([`KernelCmd`]): `build`, `list`, `clean`. The work is
//! `crate::validate::build`'s.

use clap::Subcommand;

use crate::notify::Ignore;
use crate::validate::build;

/// `blkcg-sim kernel`.
#[derive(Subcommand)]
pub enum KernelCmd {
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

/// `blkcg-sim kernel`: build, list or clean.
pub fn kernel_command(cmd: KernelCmd, quiet: bool) -> Result<u8, String> {
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
                notify: if quiet { &Ignore } else { &super::Stderr },
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
