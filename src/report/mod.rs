//! Output: fio-compatible statistics and formats (`fio/`), and our own views.

pub mod fio;
pub mod outdir;
pub mod plot;
pub mod summary;
pub mod timeline;
