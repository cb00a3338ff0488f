//! The folders `--output DIR` writes: nothing outside DIR, nothing through a symlink,
//! nothing deleted that is not ours, and no stale file of an earlier run left beside
//! this run's.
//!
//! Design
//! ------
//! A run's files live in `DIR/<label>/` (one folder per variant and kernel); the
//! label must be one plain path component ([`check_label`]: letters, digits and
//! `. _ + - @`, not starting with a dot), which `Scenario::parse` also demands of
//! variant names, so no name from a scenario can climb out of DIR. DIR itself is the
//! user's and may be anything they name (even `/`): we only ever create our label
//! folders in it and the files of [`owned`] in those. Opening a folder removes the
//! files of [`owned`] an earlier run left there (a symlink of that name is removed as
//! a link, never followed), so re-using DIR never mixes runs; every file is then
//! created anew with `O_NOFOLLOW | O_EXCL`, so a symlink planted meanwhile makes the
//! write fail instead of landing elsewhere. Files of other names are left alone.
//!
//! The commands that write into DIR itself name their files ([`OutDir::top_owning`]):
//! `sweep`, `tune`, `validate` (its console captures, traces and both sides' fio
//! JSON, named per kernel and boot) and `device plot` (per device). The one file a
//! user names outright (`device fit --output FILE`) goes through [`write_named_file`]:
//! replaced in place, a symlink refused.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The files every run may write into its folder (pictures as `.png` and `.svg`),
/// before the policies' and elevators' own.
const RUN_FILES: &[&str] = &[
    "summary.txt",
    "fio.json",
    "fio.txt",
    "iostat.csv",
    "io.stat",
    "io.pressure",
    "jobs.csv",
    "jobs.png",
    "jobs.svg",
    "clat.png",
    "clat.svg",
    "iostat.png",
    "iostat.svg",
];

/// Every file name a run may write into its folder: the run's own, then each policy's
/// and elevator's reports, streams and pictures (`crate::stack::registry`), then the
/// trace.
pub fn owned() -> &'static [&'static str] {
    static OWNED: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        let mut v = RUN_FILES.to_vec();
        v.extend(crate::stack::registry::output_files());
        v.push("trace.txt");
        v
    });
    &OWNED
}

/// Files written at the top of DIR, beside the label folders.
pub const OWNED_TOP: &[&str] = &["ab.txt", "report.html"];

/// Whether `label` can name a folder under DIR: one path component of letters,
/// digits and `. _ + - @`, at most 100 bytes, not starting with `.`.
pub fn check_label(label: &str) -> Result<(), String> {
    let ok = !label.is_empty()
        && label.len() <= 100
        && !label.starts_with('.')
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-@".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` cannot name an output folder: use letters, digits and . _ + - @ (at most \
             100, not starting with a dot)",
            label.escape_debug()
        ))
    }
}

/// One folder of ours, emptied of the files an earlier run left in it.
#[derive(Debug, Clone)]
pub struct OutDir {
    path: PathBuf,
}

fn io_err(p: &Path, e: std::io::Error) -> String {
    format!("{}: {e}", p.display())
}

/// Remove our own files `names` from `dir`; a symlink is removed, not followed.
fn remove_owned(dir: &Path, names: &[&str]) -> Result<(), String> {
    for name in names {
        let p = dir.join(name);
        match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => {
                return Err(format!(
                    "{}: a folder where blkcg-sim writes a file; move it away",
                    p.display()
                ));
            }
            Ok(_) => fs::remove_file(&p).map_err(|e| io_err(&p, e))?,
            Err(_) => {}
        }
    }
    Ok(())
}

impl OutDir {
    /// `DIR` itself (created if missing), for the files of [`OWNED_TOP`].
    pub fn top(dir: &Path) -> Result<OutDir, String> {
        Self::top_owning(dir, OWNED_TOP)
    }

    /// `DIR` itself (created if missing), emptied of the files named `owned`: the
    /// commands that write into DIR directly (`sweep`, `tune`) name theirs.
    pub fn top_owning(dir: &Path, owned: &[&str]) -> Result<OutDir, String> {
        fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        remove_owned(dir, owned)?;
        Ok(OutDir {
            path: dir.to_path_buf(),
        })
    }

    /// Whether [`OutDir::open`] of `DIR/label` would succeed as far as the names on
    /// disk tell, creating and removing nothing: a command writing several folders
    /// checks them all first, so that none is written when one cannot be.
    pub fn check(dir: &Path, label: &str) -> Result<(), String> {
        check_label(label)?;
        match fs::metadata(dir) {
            Ok(m) if !m.is_dir() => {
                return Err(format!("{}: exists and is not a folder", dir.display()));
            }
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
        let path = dir.join(label);
        match fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => Err(format!(
                "{}: is a symlink; blkcg-sim writes only into folders it can create \
                 or that are real folders",
                path.display()
            )),
            Ok(m) if !m.is_dir() => Err(format!("{}: exists and is not a folder", path.display())),
            Ok(_) => {
                for name in owned() {
                    let p = path.join(name);
                    if fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                        return Err(format!(
                            "{}: a folder where blkcg-sim writes a file; move it away",
                            p.display()
                        ));
                    }
                }
                Ok(())
            }
            Err(_) => Ok(()),
        }
    }

    /// `DIR/label`, created if missing; refused if it is a symlink or not a folder.
    pub fn open(dir: &Path, label: &str) -> Result<OutDir, String> {
        check_label(label)?;
        fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        let path = dir.join(label);
        match fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!(
                    "{}: is a symlink; blkcg-sim writes only into folders it can create \
                     or that are real folders",
                    path.display()
                ));
            }
            Ok(m) if !m.is_dir() => {
                return Err(format!("{}: exists and is not a folder", path.display()));
            }
            Ok(_) => {}
            Err(_) => fs::create_dir(&path).map_err(|e| io_err(&path, e))?,
        }
        remove_owned(&path, owned())?;
        Ok(OutDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Create file `name` (one of ours): never through a symlink, never over a file
    /// that appeared since the folder was opened.
    pub fn create(&self, name: &str) -> Result<File, String> {
        let p = self.path.join(name);
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&p)
            .map_err(|e| io_err(&p, e))
    }

    /// Create file `name`, which the scenario named (a job's `write_iolog`), as
    /// [`OutDir::create`] does, after removing what an earlier run left of that name
    /// (a symlink as a link; a folder is refused).
    pub fn create_replacing(&self, name: &str) -> Result<File, String> {
        remove_owned(&self.path, &[name])?;
        self.create(name)
    }

    /// Create file `name` (one of ours) with `text`, as [`OutDir::create`] does.
    pub fn write(&self, name: &str, text: &str) -> Result<(), String> {
        self.open_file(name)?.write(text)
    }

    /// Create file `name` (one of ours) as [`OutDir::create`] does and let `fill`
    /// write it through a buffer: a report written piece by piece never exists whole.
    pub fn write_with(
        &self,
        name: &str,
        fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<(), String> {
        let mut w = std::io::BufWriter::new(self.create(name)?);
        fill(&mut w)
            .and_then(|()| w.flush())
            .map_err(|e| io_err(&self.path.join(name), e))
    }

    /// Create file `name` (one of ours) as [`OutDir::create`] does, to write it piece
    /// by piece (a sweep's results as they come).
    pub fn open_file(&self, name: &str) -> Result<OutFile, String> {
        Ok(OutFile {
            path: self.path.join(name),
            file: self.create(name)?,
        })
    }
}

/// Write `text` to the one file the user named on the command line (`device fit
/// --output FILE`): created, or an existing file replaced in place, but never through
/// a symlink: one there is refused (`O_NOFOLLOW`), not followed and not removed.
pub fn write_named_file(path: &Path, text: &str) -> Result<(), String> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => format!(
                "{}: is a symlink; blkcg-sim does not write through one: name the file itself",
                path.display()
            ),
            _ => format!("{}: cannot write: {e}", path.display()),
        })
}

/// A file of ours being written.
pub struct OutFile {
    path: PathBuf,
    file: File,
}

impl OutFile {
    /// Append `text`.
    pub fn write(&mut self, text: &str) -> Result<(), String> {
        self.file
            .write_all(text.as_bytes())
            .map_err(|e| io_err(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("blkcg-outdir-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn labels_are_one_plain_component() {
        for ok in [
            "before",
            "6.10",
            "after@6.12.117",
            "kernel-7.0-rc3",
            "a+b_c",
        ] {
            assert!(check_label(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", ".", "..", "../x", "/abs", "a/b", ".hidden", "a b", "x\n", "é",
        ] {
            assert!(check_label(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_reused_folder_loses_our_stale_files_and_keeps_the_rest() {
        let d = tmp("reuse");
        let v = OutDir::open(&d, "v").unwrap();
        v.write("timeline.csv", "old").unwrap();
        fs::write(d.join("v/notes.md"), "mine").unwrap();
        let v = OutDir::open(&d, "v").unwrap();
        assert!(!d.join("v/timeline.csv").exists());
        assert_eq!(fs::read_to_string(d.join("v/notes.md")).unwrap(), "mine");
        v.write("fio.json", "{}").unwrap();
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn symlinks_are_never_followed() {
        let d = tmp("symlink");
        let outside = d.join("outside.txt");
        fs::write(&outside, "precious").unwrap();
        fs::create_dir(d.join("out")).unwrap();
        // a folder that is a symlink is refused
        std::os::unix::fs::symlink(&d, d.join("out/v")).unwrap();
        assert!(OutDir::open(&d.join("out"), "v").is_err());
        fs::remove_file(d.join("out/v")).unwrap();
        // a symlink with one of our names is removed as a link
        fs::create_dir(d.join("out/w")).unwrap();
        std::os::unix::fs::symlink(&outside, d.join("out/w/fio.json")).unwrap();
        let w = OutDir::open(&d.join("out"), "w").unwrap();
        w.write("fio.json", "{}").unwrap();
        assert_eq!(fs::read_to_string(&outside).unwrap(), "precious");
        // one planted after opening makes the write fail
        std::os::unix::fs::symlink(&outside, d.join("out/w/fio.txt")).unwrap();
        assert!(w.write("fio.txt", "x").is_err());
        assert_eq!(fs::read_to_string(&outside).unwrap(), "precious");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_named_file_is_replaced_but_a_symlink_refused() {
        let d = tmp("named");
        let f = d.join("fit.toml");
        fs::write(&f, "old, longer text").unwrap();
        write_named_file(&f, "new").unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "new");
        let outside = d.join("outside.txt");
        fs::write(&outside, "precious").unwrap();
        std::os::unix::fs::symlink(&outside, d.join("link.toml")).unwrap();
        let e = write_named_file(&d.join("link.toml"), "x").unwrap_err();
        assert!(e.contains("is a symlink"), "{e}");
        assert_eq!(fs::read_to_string(&outside).unwrap(), "precious");
        assert!(fs::symlink_metadata(d.join("link.toml")).is_ok());
        fs::remove_dir_all(&d).unwrap();
    }
}
