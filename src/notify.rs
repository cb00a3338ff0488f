//! What the library has to tell a person while it works — a warning, a status line,
//! a line of the controllers' event log — goes to a sink its caller supplies: the
//! library prints nothing on its own.
//!
//! The command line's sink ([`crate::cli::Stderr`]) prints each notice on stderr as
//! the commands always have (`warning: plot not drawn: ...`); an embedder passes its
//! own (a closure `|n: Notice| ...` is one), or [`Ignore`]. Progress bars and status
//! lines of long runs go through [`crate::progress::Reporter`], which the caller
//! chooses the same way (`Reporter::Quiet` shows nothing).

/// One thing to tell the person waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice<'a> {
    /// The work went on, but something was not done (`plot not drawn: ...`); the
    /// command line prints `warning: ` and the message.
    Warning(&'a str),
    /// A status line, whole (`blkcg-sim: sweep: 12 run(s) in 3.1 s wall ...`); the
    /// command line prints it as is.
    Status(&'a str),
}

/// Where notices go. Shared by work on several threads, so it is `Sync`.
pub trait Notify: Sync {
    fn notice(&self, n: Notice<'_>);

    /// A [`Notice::Warning`].
    fn warning(&self, msg: &str) {
        self.notice(Notice::Warning(msg));
    }

    /// A [`Notice::Status`].
    fn status(&self, line: &str) {
        self.notice(Notice::Status(line));
    }
}

impl<F: Fn(Notice<'_>) + Sync> Notify for F {
    fn notice(&self, n: Notice<'_>) {
        self(n)
    }
}

impl std::fmt::Debug for dyn Notify + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("dyn Notify")
    }
}

/// A sink that drops every notice.
pub struct Ignore;

impl Notify for Ignore {
    fn notice(&self, _: Notice<'_>) {}
}

/// Each line of the controllers' event log as a run makes it (a run on its own
/// thread owns its sink; see `RecordOptions::trace_live`).
pub type TraceSink = Box<dyn FnMut(&str) + Send>;
