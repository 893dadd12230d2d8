//! Errors of the `demo` tool: a native demo's, a Quake 3 demo's, or the
//! tool's own.

use thiserror::Error;

use demo::DemoError;
use q3::Q3Error;

/// Anything that can go wrong in a command.
#[derive(Debug, Error)]
pub enum ToolError {
    /// A native demo could not be read, played or written.
    #[error("{0}")]
    Demo(#[from] DemoError),
    /// A Quake 3 demo could not be read.
    #[error("{0}")]
    Q3(#[from] Q3Error),
    /// Converted states differ from the original (a bug, never expected).
    #[error("conversion check failed: {0}")]
    ConversionMismatch(String),
}

impl From<std::io::Error> for ToolError {
    fn from(error: std::io::Error) -> Self {
        ToolError::Demo(DemoError::Io(error))
    }
}

impl From<snapshot::EncodeError> for ToolError {
    fn from(error: snapshot::EncodeError) -> Self {
        ToolError::Demo(DemoError::Encode(error))
    }
}

impl ToolError {
    /// The recorder refused a call (see [`DemoError::Refused`]).
    pub fn refused(reason: impl Into<String>) -> Self {
        ToolError::Demo(DemoError::Refused(reason.into()))
    }

    /// Whether this is the truncation outcome: every complete record before
    /// it was good.
    pub fn is_truncation(&self) -> bool {
        match self {
            ToolError::Demo(error) => error.is_truncation(),
            ToolError::Q3(error) => error.is_truncation(),
            ToolError::ConversionMismatch(_) => false,
        }
    }
}
