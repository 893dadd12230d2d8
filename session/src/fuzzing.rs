//! Entry points for the fuzz targets in `session/fuzz` and the test that
//! replays their seed corpus (`tests/fuzz_seeds.rs`), so both drive the
//! same decoders. Not part of the API a game uses.

use fields::{net_struct, signed, unsigned, Codec};

use snapshot::ViewStamp;

use crate::wire::{ClientMessage, CommandPacket, ServerMessage, SnapshotPayload};

net_struct! {
    /// A command shaped like a shooter's (Quake 3's `usercmd_t` fields).
    pub struct FuzzCommand {
        /// Milliseconds covered.
        pub msec: u8 = unsigned(8),
        /// Buttons.
        pub buttons: u8 = unsigned(4),
        /// Forward move.
        pub forward: i8 = signed(8),
        /// Side move.
        pub right: i8 = signed(8),
        /// View yaw.
        pub yaw: u16 = unsigned(16),
        /// View pitch.
        pub pitch: i16 = signed(16),
    }
}

/// Everything a client decodes from a server: the first byte picks a
/// reliable message (even) or a snapshot payload (odd). A decoded message
/// must re-encode to bytes that decode to the same message.
pub fn server_input(data: &[u8]) {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    if which % 2 == 0 {
        if let Ok(message) = ServerMessage::decode(body) {
            let mut out = Vec::new();
            message.encode(&mut out);
            assert_eq!(ServerMessage::decode(&out), Ok(message));
        }
    } else if let Ok(payload) = SnapshotPayload::decode(body) {
        let mut out = Vec::new();
        payload.encode(&mut out);
        assert_eq!(out, body);
    }
}

/// Everything a server decodes from a client: the first byte picks a
/// reliable message (0), or a command packet in the native (1) or Quake 3
/// (2) codec. Decoded command packets re-encode and decode to the same
/// commands.
pub fn client_input(data: &[u8]) {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    match which % 3 {
        0 => {
            if let Ok(message) = ClientMessage::decode(body) {
                let mut out = Vec::new();
                message.encode(&mut out);
                assert_eq!(ClientMessage::decode(&out), Ok(message));
            }
        }
        n => {
            let codec = if n == 1 { Codec::Native } else { Codec::Q3 };
            // The base a server would hold for a based packet.
            let held = FuzzCommand {
                msec: 16,
                yaw: 900,
                ..FuzzCommand::default()
            };
            let mut commands: Vec<(u32, FuzzCommand, Option<ViewStamp>)> = Vec::new();
            if let Ok(based) =
                CommandPacket::decode_viewed(codec, body, |_| Some(held), &mut commands)
            {
                assert!(
                    !commands.is_empty() && commands.len() <= crate::wire::MAX_COMMANDS_PER_PACKET
                );
                assert!(commands.windows(2).all(|w| w[1].0 == w[0].0 + 1));
                let mut buf = [0u8; crate::wire::MAX_COMMAND_PACKET];
                let (len, count) = CommandPacket::encode_viewed(
                    codec,
                    commands[0].0,
                    based.then_some(&held),
                    commands.iter().map(|(_, c, v)| (c, v.as_ref())),
                    &mut buf,
                )
                .expect("decoded commands encode");
                assert_eq!(count, commands.len());
                let mut again = Vec::new();
                let based_again =
                    CommandPacket::decode_viewed(codec, &buf[..len], |_| Some(held), &mut again)
                        .expect("round trip");
                assert_eq!((based_again, again), (based, commands));
                // The view-less decoder reads the same commands.
                let mut plain = Vec::new();
                CommandPacket::decode_with(codec, body, |_| Some(held), &mut plain)
                    .expect("same packet");
                assert_eq!(plain.len(), count);
            }
        }
    }
}
