//! Error types shared by every input parser.
//!
//! - [`KeyError`]: a scenario/device/kernel key with a bad value — says which key, what
//!   was wrong and what is accepted. The scenario loader adds the file and line.
//! - [`crate::blkcg::KernelError`]: an interface-file write the kernel would refuse,
//!   with the errno it would return.

/// A bad key or value in a configuration table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}`: {msg}")]
pub struct KeyError {
    /// Dotted key path, e.g. `device.iops`.
    pub key: String,
    /// What is wrong and what is accepted.
    pub msg: String,
}

impl KeyError {
    pub fn new(key: impl Into<String>, msg: impl Into<String>) -> Self {
        KeyError {
            key: key.into(),
            msg: msg.into(),
        }
    }
}
