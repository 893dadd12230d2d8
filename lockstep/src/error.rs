//! What can stop a lockstep session.

use thiserror::Error;

use crate::sim::SimError;
use crate::wire::{ParticipantId, WireError};

/// Why a participant or the host stopped.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LockstepError {
    /// The sync checksums of `turn` disagreed.
    #[error(
        "out of sync at turn {turn}: participant(s) {participants:?} disagree with the others \
         (states last agreed at turn {})",
        .last_agreed.map_or_else(|| "none: the first sync turn".to_string(), |t| t.to_string())
    )]
    OutOfSync {
        /// The sync turn whose checksums disagreed.
        turn: u32,
        /// The participants whose checksum differs from the majority (all
        /// of them in a tie).
        participants: Vec<ParticipantId>,
        /// The previous sync turn, whose checksums all agreed (`None`: this
        /// was the first sync turn). The divergence happened after it.
        last_agreed: Option<u32>,
    },
    /// A malformed message.
    #[error("from {from}: {source}")]
    Wire {
        /// Who sent it (`"host"` or `"participant N"`).
        from: String,
        /// What was wrong.
        #[source]
        source: WireError,
    },
    /// A well-formed message that breaks the protocol (a turn out of order,
    /// a second start).
    #[error("protocol violation by {from}: {reason}")]
    Protocol {
        /// Who sent it.
        from: String,
        /// What rule it broke.
        reason: String,
    },
    /// The simulation could not be created.
    #[error("{0}")]
    Simulation(#[from] SimError),
    /// The connection to the host ended.
    #[error("lost the host")]
    HostLost,
    /// This participant was dropped by the host.
    #[error("dropped from the session at turn {turn}")]
    Dropped {
        /// The turn from which it no longer takes part.
        turn: u32,
    },
    /// A command does not fit this turn's set (too many or too large).
    #[error("command set for turn {turn} is full")]
    SetFull {
        /// The turn the set executes at.
        turn: u32,
    },
}
