//! Error types shared by every input parser.
//!
//! - [`KeyError`]: a scenario/device/kernel key with a bad value — says which key, what
//!   was wrong and what is accepted. The scenario loader adds the file and line.
//! - [`Named`]: a behaviour switch's values by the names scenarios write, one table
//!   that both parses (with the accepted names in the error) and prints.
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

/// A switch's values by the names scenarios write: one table both parses and prints.
pub trait Named: Copy + PartialEq + 'static {
    const NAMES: &'static [(&'static str, Self)];

    /// The value called `val`, or which names `key` accepts.
    fn parse(key: &str, val: &str) -> Result<Self, KeyError> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == val)
            .map(|&(_, v)| v)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::NAMES.iter().map(|(n, _)| *n).collect();
                KeyError::new(key, format!("`{val}`: accepted: {}", names.join(", ")))
            })
    }

    /// The name scenarios write for this value.
    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, v)| *v == self)
            .map_or("?", |(n, _)| n)
    }
}
