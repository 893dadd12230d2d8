//! The arena's error type: what can stop a match.

use std::fmt;
use std::io;

/// Why a match could not run.
#[derive(Debug)]
pub enum Error {
    /// A socket or file failed.
    Io(io::Error),
    /// The snapshot layer refused something the arena asked (a bug here).
    Snapshot(snapshot::ServerError),
    /// The configuration is unusable.
    Config(String),
    /// Recording the demo failed.
    Demo(String),
    /// The server refused the connection (schema or version mismatch, full)
    /// or never answered.
    Refused(String),
    /// The session layer refused something the arena asked (a bug here).
    Session(session::SessionError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "i/o: {e}"),
            Error::Snapshot(e) => write!(f, "snapshot server: {e}"),
            Error::Config(e) => write!(f, "configuration: {e}"),
            Error::Demo(e) => write!(f, "demo recording: {e}"),
            Error::Refused(e) => write!(f, "connection refused: {e}"),
            Error::Session(e) => write!(f, "session: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            Error::Snapshot(e) => Some(e),
            Error::Session(e) => Some(e),
            Error::Config(_) | Error::Demo(_) | Error::Refused(_) => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<snapshot::ServerError> for Error {
    fn from(e: snapshot::ServerError) -> Self {
        Error::Snapshot(e)
    }
}

impl From<session::SessionError> for Error {
    fn from(e: session::SessionError) -> Self {
        match e {
            session::SessionError::Demo(e) => Error::Demo(e.to_string()),
            other => Error::Session(other),
        }
    }
}
