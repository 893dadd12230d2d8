//! A bot's command as lockstep carries it: the command's number (the
//! world applies each player's commands in increasing number, as under the
//! session) followed by its fields, little-endian, in a fixed 12 bytes.
//! Lockstep sends every command once, guaranteed and in order, so no delta
//! coding is needed here: the bytes only have to be the same everywhere.

use crate::protocol::{Command, ProtocolError};

/// Size of one encoded command.
pub const COMMAND_BYTES: usize = 12;

/// Command `number` as lockstep sends it.
pub fn encode(number: u32, command: &Command) -> [u8; COMMAND_BYTES] {
    let mut out = [0u8; COMMAND_BYTES];
    out[0..4].copy_from_slice(&number.to_le_bytes());
    out[4] = command.msec;
    out[5] = command.buttons;
    out[6] = command.forward as u8;
    out[7] = command.right as u8;
    out[8..10].copy_from_slice(&command.yaw.to_le_bytes());
    out[10..12].copy_from_slice(&command.pitch.to_le_bytes());
    out
}

/// The number and command in `bytes`; a wrong length is an error (the
/// values themselves are sanitized when the world applies them).
pub fn decode(bytes: &[u8]) -> Result<(u32, Command), ProtocolError> {
    let b: &[u8; COMMAND_BYTES] = bytes.try_into().map_err(|_| ProtocolError::Truncated {
        needed: COMMAND_BYTES,
        len: bytes.len(),
    })?;
    let number = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let command = Command {
        msec: b[4],
        buttons: b[5],
        forward: b[6] as i8,
        right: b[7] as i8,
        yaw: u16::from_le_bytes([b[8], b[9]]),
        pitch: i16::from_le_bytes([b[10], b[11]]),
    };
    Ok((number, command))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_and_wrong_lengths_are_errors() {
        let command = Command {
            msec: 33,
            buttons: 3,
            forward: -127,
            right: 90,
            yaw: 65_000,
            pitch: -16_384,
        };
        let bytes = encode(70_001, &command);
        assert_eq!(decode(&bytes).unwrap(), (70_001, command));
        assert_eq!(
            decode(&bytes[..11]).unwrap_err(),
            ProtocolError::Truncated {
                needed: 12,
                len: 11
            }
        );
        assert!(decode(&[0u8; 13]).is_err());
    }
}
