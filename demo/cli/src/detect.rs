//! Telling demo formats apart by content, never by file name.

use crate::error::ToolError;
use demo::format::{has_magic, FORMAT_NAME, MAGIC};
use demo::DemoError;

/// A demo file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// This crate's format ([`demo::format`]).
    Native,
    /// Quake 3 protocol 68 (`.dm_68`).
    Dm68,
}

impl Format {
    /// Detects the format of `data` (a whole file or its first bytes): the
    /// native magic, else a first record that decodes as a Quake 3 message.
    pub fn detect(data: &[u8]) -> Result<Format, ToolError> {
        if has_magic(data) {
            return Ok(Format::Native);
        }
        match q3::check_dm68(data) {
            Ok(()) => Ok(Format::Dm68),
            Err(q3_reason) => Err(ToolError::Demo(DemoError::NotADemo {
                reason: format!(
                    "no {:?} magic, and not a Quake 3 demo either ({q3_reason})",
                    String::from_utf8_lossy(&MAGIC)
                ),
            })),
        }
    }

    /// The `format` name in tool output.
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => FORMAT_NAME,
            Format::Dm68 => q3::FORMAT_NAME,
        }
    }
}
