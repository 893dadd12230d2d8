//! The client side of protocol 68: the state a Quake 3 client keeps while it
//! parses server messages, and the parser itself.

use std::convert::Infallible;
use std::sync::Arc;

use fields::codec::Q3_ENTITY_END;
use fields::merge::{read_entity_list, ListError};
use fields::{
    BitReader, BitSource, Codec, DeltaContext, EntityBody, EntityHeader, HuffmanCode, HuffmanReader,
};

use crate::commands::ConfigstringCommands;
use crate::error::MessageError;
use crate::message::{
    read_bits, read_string, svc, Command, Download, Gamestate, ParsedCommand, ParsedMessage,
    ServerCommand, SnapshotCommand, BIG_INFO_STRING, MAX_CONFIGSTRINGS, MAX_GAMESTATE_CHARS,
    MAX_MSGLEN, MAX_STRING_CHARS,
};
use crate::snapshot::{base_message, Baselines, Snapshot, Validity, MAX_MAP_AREA_BYTES};
use crate::tables::{EntityState, PlayerState, GENTITYNUM_BITS};

/// Snapshots the client keeps for delta decoding (`PACKET_BACKUP`).
pub const PACKET_BACKUP: usize = 32;
/// Size of Quake 3's ring of parsed entities (`MAX_PARSE_ENTITIES`).
pub const MAX_PARSE_ENTITIES: u64 = 2048;
/// Most entities in one snapshot the server sends (`MAX_SNAPSHOT_ENTITIES`).
pub const MAX_SNAPSHOT_ENTITIES: u64 = 256;

type Reader<'a> = HuffmanReader<'a, 'static>;

/// One entry of the snapshot ring.
#[derive(Debug, Clone)]
struct RingSlot {
    snapshot: Arc<Snapshot>,
    valid: bool,
    /// Value of the parse-entities counter when the snapshot's entities began.
    parse_entities_num: u64,
}

/// A Quake 3 client's parse state: configstrings, spawn baselines, the ring
/// of the last [`PACKET_BACKUP`] snapshots keyed by message sequence, and
/// the reliable command sequence.
///
/// Feed it every message of a demo in order with [`Q3Client::parse_message`].
/// After an error the state is unspecified (but safe to drop); Quake 3 drops
/// the connection at that point too.
#[derive(Debug, Clone)]
pub struct Q3Client {
    configstrings: Vec<String>,
    gamestate_chars: usize,
    baselines: Arc<Baselines>,
    ring: Vec<Option<RingSlot>>,
    /// Message number of the last valid snapshot (`cl.snap.messageNum`).
    last_valid_message: i32,
    parse_entities_num: u64,
    server_command_sequence: i32,
    reliable_acknowledge: i32,
    client_num: Option<i32>,
    checksum_feed: i32,
    gamestates: usize,
    configstring_commands: ConfigstringCommands,
    download_block: u32,
    /// The entity list of a snapshot that left the ring with no one else
    /// holding it, cleared, for the next snapshot's entities to fill: a
    /// reader that drops what it is given allocates no list per snapshot.
    spare_entities: Vec<(u32, EntityState)>,
}

impl Default for Q3Client {
    fn default() -> Self {
        Q3Client {
            configstrings: vec![String::new(); MAX_CONFIGSTRINGS],
            gamestate_chars: 1,
            baselines: Arc::default(),
            ring: vec![None; PACKET_BACKUP],
            last_valid_message: 0,
            parse_entities_num: 0,
            server_command_sequence: 0,
            reliable_acknowledge: 0,
            client_num: None,
            checksum_feed: 0,
            gamestates: 0,
            configstring_commands: ConfigstringCommands::default(),
            download_block: 0,
            spare_entities: Vec::new(),
        }
    }
}

impl Q3Client {
    /// A client that has seen nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Configstring `index` (empty when unset or out of range).
    pub fn configstring(&self, index: usize) -> &str {
        self.configstrings.get(index).map_or("", String::as_str)
    }

    /// The configstrings that are set, by index.
    pub fn configstrings(&self) -> impl Iterator<Item = (usize, &str)> {
        self.configstrings
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty())
            .map(|(i, s)| (i, s.as_str()))
    }

    /// The spawn baselines of the current gamestate.
    pub fn baselines(&self) -> &Arc<Baselines> {
        &self.baselines
    }

    /// The valid snapshot of message `message_num`, if still in the ring.
    pub fn snapshot(&self, message_num: i32) -> Option<&Arc<Snapshot>> {
        match &self.ring[ring_index(message_num)] {
            Some(slot) if slot.valid && slot.snapshot.message_num == message_num => {
                Some(&slot.snapshot)
            }
            _ => None,
        }
    }

    /// The last valid snapshot (`cl.snap`), if any since the gamestate.
    pub fn latest_snapshot(&self) -> Option<&Arc<Snapshot>> {
        self.snapshot(self.last_valid_message)
    }

    /// The recording client's number, once a gamestate was parsed.
    pub fn client_num(&self) -> Option<i32> {
        self.client_num
    }

    /// The checksum feed of the last gamestate.
    pub fn checksum_feed(&self) -> i32 {
        self.checksum_feed
    }

    /// The highest reliable server command sequence seen.
    pub fn server_command_sequence(&self) -> i32 {
        self.server_command_sequence
    }

    /// The reliable acknowledge of the last message.
    pub fn reliable_acknowledge(&self) -> i32 {
        self.reliable_acknowledge
    }

    /// How many gamestates were parsed (a map change sends a new one).
    pub fn gamestates(&self) -> usize {
        self.gamestates
    }

    /// Parses one server message: `sequence` is the record's message
    /// sequence, `message` its bytes. Updates the client state and returns
    /// every command, snapshots fully reconstructed.
    pub fn parse_message(
        &mut self,
        sequence: i32,
        message: &[u8],
    ) -> Result<ParsedMessage, MessageError> {
        if message.len() > MAX_MSGLEN {
            return Err(MessageError::TooLong {
                len: message.len(),
                max: MAX_MSGLEN,
            });
        }
        let mut src: Reader<'_> =
            HuffmanReader::new(BitReader::new(message), HuffmanCode::quake3());
        let reliable_acknowledge = read_bits(&mut src, 32, "reliable acknowledge")? as i32;
        self.reliable_acknowledge = reliable_acknowledge;
        let mut commands = Vec::new();
        loop {
            let start = src.bits_read();
            let byte = read_bits(&mut src, 8, "command byte")? as u8;
            let command = match byte {
                svc::EOF => break,
                svc::NOP => Command::Nop,
                svc::GAMESTATE => Command::Gamestate(Box::new(self.parse_gamestate(&mut src)?)),
                svc::CONFIGSTRING => {
                    let (index, text) = read_configstring(&mut src)?;
                    self.configstrings[usize::from(index)] = text.clone();
                    Command::Configstring { index, text }
                }
                svc::BASELINE => {
                    let (number, state) = read_baseline(&mut src)?;
                    Arc::make_mut(&mut self.baselines).set(number, state);
                    Command::Baseline {
                        number,
                        state: Box::new(state),
                    }
                }
                svc::SERVER_COMMAND => Command::ServerCommand(self.parse_server_command(&mut src)?),
                svc::DOWNLOAD => Command::Download(self.parse_download(&mut src)?),
                svc::SNAPSHOT => Command::Snapshot(self.parse_snapshot(&mut src, sequence)?),
                byte => return Err(MessageError::BadCommand { byte, bit: start }),
            };
            commands.push(ParsedCommand {
                bits: start..src.bits_read(),
                command,
            });
        }
        Ok(ParsedMessage {
            sequence,
            reliable_acknowledge,
            commands,
            bits: src.bits_read(),
        })
    }

    /// `svc_gamestate`: wipes the client state (as `CL_ClearState` does) and
    /// loads configstrings and baselines.
    fn parse_gamestate(&mut self, src: &mut Reader<'_>) -> Result<Gamestate, MessageError> {
        let server_command_sequence = read_bits(src, 32, "gamestate command sequence")? as i32;
        // Like `CL_ClearState`: the game state goes, the connection's
        // (acknowledge, download progress, a half-received big configstring) stays.
        let mut fresh = Q3Client {
            server_command_sequence,
            reliable_acknowledge: self.reliable_acknowledge,
            gamestates: self.gamestates + 1,
            configstring_commands: std::mem::take(&mut self.configstring_commands),
            download_block: self.download_block,
            ..Q3Client::default()
        };
        let mut baselines = Baselines::default();
        let mut gamestate = Gamestate {
            server_command_sequence,
            configstrings: Vec::new(),
            baselines: Vec::new(),
            client_num: 0,
            checksum_feed: 0,
        };
        loop {
            let bit = src.bits_read();
            match read_bits(src, 8, "gamestate command byte")? as u8 {
                svc::EOF => break,
                svc::CONFIGSTRING => {
                    let (index, text) = read_configstring(src)?;
                    // Quake 3 appends every string to one buffer, repeats included.
                    fresh.gamestate_chars += text.len() + 1;
                    if fresh.gamestate_chars > MAX_GAMESTATE_CHARS {
                        return Err(MessageError::GamestateTooLarge {
                            index: usize::from(index),
                            bit,
                            max: MAX_GAMESTATE_CHARS,
                        });
                    }
                    fresh.configstrings[usize::from(index)] = text.clone();
                    gamestate.configstrings.push((index, text));
                }
                svc::BASELINE => {
                    let (number, state) = read_baseline(src)?;
                    baselines.set(number, state);
                    gamestate.baselines.push((number, state));
                }
                byte => return Err(MessageError::BadGamestateCommand { byte, bit }),
            }
        }
        gamestate.client_num = read_bits(src, 32, "gamestate client number")? as i32;
        gamestate.checksum_feed = read_bits(src, 32, "gamestate checksum feed")? as i32;
        fresh.client_num = Some(gamestate.client_num);
        fresh.checksum_feed = gamestate.checksum_feed;
        fresh.baselines = Arc::new(baselines);
        *self = fresh;
        Ok(gamestate)
    }

    fn parse_server_command(
        &mut self,
        src: &mut Reader<'_>,
    ) -> Result<ServerCommand, MessageError> {
        let sequence = read_bits(src, 32, "server command sequence")? as i32;
        let text = read_string(src, MAX_STRING_CHARS, "server command")?;
        // Reliable commands are resent until acknowledged; only the first
        // copy counts.
        let is_new = sequence > self.server_command_sequence;
        if is_new {
            self.server_command_sequence = sequence;
            self.apply_server_command(&text);
        }
        Ok(ServerCommand {
            sequence,
            text,
            is_new,
        })
    }

    /// Applies a new reliable command's configstring update, if it is one.
    fn apply_server_command(&mut self, text: &str) {
        if let Some((index, value)) = self.configstring_commands.apply(text) {
            if let Some(slot) = self.configstrings.get_mut(index) {
                *slot = value;
            }
        }
    }

    /// `svc_download`. The layout depends on the client's download state
    /// (the file size comes with the first block), tracked like Quake 3.
    fn parse_download(&mut self, src: &mut Reader<'_>) -> Result<Download, MessageError> {
        let block = read_bits(src, 16, "download block")? as u16;
        let mut file_size = None;
        if block == 0 && self.download_block == 0 {
            let bit = src.bits_read();
            let size = read_bits(src, 32, "download file size")? as i32;
            if size < 0 {
                let reason = read_string(src, MAX_STRING_CHARS, "download error text")?;
                return Err(MessageError::DownloadRefused { reason, bit });
            }
            file_size = Some(size);
        }
        let bit = src.bits_read();
        let size = i32::from(read_bits(src, 16, "download chunk size")? as u16 as i16);
        let len = usize::try_from(size)
            .ok()
            .filter(|&len| len <= MAX_MSGLEN)
            .ok_or(MessageError::DownloadChunk {
                size,
                bit,
                max: MAX_MSGLEN,
            })?;
        let mut data = vec![0; len];
        src.get_bytes(&mut data)
            .map_err(|e| MessageError::bits("download chunk", e))?;
        if self.download_block & 0xFFFF == u32::from(block) {
            self.download_block = self.download_block.wrapping_add(1);
        }
        Ok(Download {
            block,
            file_size,
            data,
        })
    }

    /// `svc_snapshot`: the header, the player-state delta and the packet
    /// entities, merged against the base snapshot or the spawn baselines.
    fn parse_snapshot(
        &mut self,
        src: &mut Reader<'_>,
        message_num: i32,
    ) -> Result<SnapshotCommand, MessageError> {
        let server_time = read_bits(src, 32, "snapshot server time")? as i32;
        let delta_num = read_bits(src, 8, "snapshot delta number")? as u8;
        let snap_flags = read_bits(src, 8, "snapshot flags")? as u8;

        let (base, validity) = self.base_for(message_num, delta_num);

        let bit = src.bits_read();
        let len = read_bits(src, 8, "area mask length")? as usize;
        if len > MAX_MAP_AREA_BYTES {
            return Err(MessageError::AreamaskTooLong {
                len,
                bit,
                max: MAX_MAP_AREA_BYTES,
            });
        }
        let mut areamask = vec![0; len];
        src.get_bytes(&mut areamask)
            .map_err(|e| MessageError::bits("area mask", e))?;

        let mut ps = base.as_ref().map_or_else(PlayerState::default, |b| b.ps);
        Codec::Q3
            .read_delta(src, &mut ps)
            .map_err(|e| MessageError::bits("player state", e))?;

        let old = base.as_ref().map_or(&[][..], |b| &b.entities[..]);
        let mut entities = std::mem::take(&mut self.spare_entities);
        read_packet_entities(src, old, &self.baselines, &mut entities)?;

        let parse_entities_num = self.parse_entities_num;
        self.parse_entities_num += entities.len() as u64;
        let snapshot = Arc::new(Snapshot {
            message_num,
            delta_num,
            server_time,
            snap_flags,
            areamask,
            ps,
            entities,
            server_command_num: self.server_command_sequence,
            validity,
        });
        if validity == Validity::Valid {
            self.store(&snapshot, parse_entities_num);
        }
        Ok(SnapshotCommand {
            snapshot,
            base,
            baselines: Arc::clone(&self.baselines),
        })
    }

    /// The ring entry a snapshot deltas from and whether Quake 3 would
    /// accept it. Like Quake 3, an invalid base is still used for decoding
    /// (so the bit stream stays in sync), and an empty slot is zero state.
    fn base_for(&self, message_num: i32, delta_num: u8) -> (Option<Arc<Snapshot>>, Validity) {
        let Some(base) = base_message(message_num, delta_num) else {
            return (None, Validity::Valid);
        };
        let Some(slot) = &self.ring[ring_index(base)] else {
            return (None, Validity::BaseInvalid { base });
        };
        let validity = if !slot.valid {
            Validity::BaseInvalid { base }
        } else if slot.snapshot.message_num != base {
            Validity::BaseTooOld {
                base,
                found: slot.snapshot.message_num,
            }
        } else if self.parse_entities_num - slot.parse_entities_num
            > MAX_PARSE_ENTITIES - MAX_SNAPSHOT_ENTITIES
        {
            Validity::ParseEntitiesTooOld { base }
        } else {
            Validity::Valid
        };
        (Some(Arc::clone(&slot.snapshot)), validity)
    }

    /// Keeps a valid snapshot, first invalidating the slots of the messages
    /// skipped since the last one (so a wrapped-around slot never passes for
    /// a dropped message).
    fn store(&mut self, snapshot: &Arc<Snapshot>, parse_entities_num: u64) {
        let new = i64::from(snapshot.message_num);
        let mut skipped = i64::from(self.last_valid_message) + 1;
        if new - skipped >= PACKET_BACKUP as i64 {
            skipped = new - (PACKET_BACKUP as i64 - 1);
        }
        while skipped < new {
            if let Some(slot) = &mut self.ring[ring_index(skipped as i32)] {
                slot.valid = false;
            }
            skipped += 1;
        }
        self.last_valid_message = snapshot.message_num;
        let evicted = self.ring[ring_index(snapshot.message_num)].replace(RingSlot {
            snapshot: Arc::clone(snapshot),
            valid: true,
            parse_entities_num,
        });
        if let Some(Ok(mut old)) = evicted.map(|slot| Arc::try_unwrap(slot.snapshot)) {
            if old.entities.capacity() > self.spare_entities.capacity() {
                old.entities.clear();
                self.spare_entities = std::mem::take(&mut old.entities);
            }
        }
    }
}

fn ring_index(message_num: i32) -> usize {
    (message_num as u32 as usize) & (PACKET_BACKUP - 1)
}

/// Index and text of a configstring (gamestate entry or top-level command).
fn read_configstring(src: &mut Reader<'_>) -> Result<(u16, String), MessageError> {
    let bit = src.bits_read();
    // Quake 3 reads the index as a signed short.
    let index = i32::from(read_bits(src, 16, "configstring index")? as u16 as i16);
    let index = u16::try_from(index)
        .ok()
        .filter(|&i| usize::from(i) < MAX_CONFIGSTRINGS)
        .ok_or(MessageError::ConfigstringIndex {
            index,
            bit,
            max: MAX_CONFIGSTRINGS,
        })?;
    let text = read_string(src, BIG_INFO_STRING, "configstring text")?;
    Ok((index, text))
}

/// Number and state of a spawn baseline: an entity delta from zero.
fn read_baseline(src: &mut Reader<'_>) -> Result<(u32, EntityState), MessageError> {
    let number = read_bits(src, u32::from(GENTITYNUM_BITS), "baseline number")?;
    let mut state = EntityState::default();
    let body = Codec::Q3
        .read_entity_body(src, EntityHeader::with_flag_in_body(number), &mut state)
        .map_err(|e| MessageError::bits(format!("baseline {number}"), e))?;
    if body == EntityBody::Removed {
        state = EntityState::default();
    }
    Ok((number, state))
}

/// The packet entities of a snapshot: a sorted merge of the numbers on the
/// wire with the base snapshot's entities. Base entities below the next
/// wire number are carried over unchanged; an equal number deltas from the
/// base entity (or removes it); a number not in the base deltas from its
/// spawn baseline. Base entities after the end marker are carried over.
fn read_packet_entities(
    src: &mut Reader<'_>,
    old: &[(u32, EntityState)],
    baselines: &Baselines,
    out: &mut Vec<(u32, EntityState)>,
) -> Result<(), MessageError> {
    out.clear();
    out.reserve(old.len() + 8);
    let like = EntityState::default();
    // Quake 3 ignores a removal of an entity it does not hold: nothing to
    // refuse. Its codec needs no delta context.
    read_entity_list(
        Codec::Q3,
        &DeltaContext::default(),
        src,
        Q3_ENTITY_END,
        old,
        &like,
        |number| baselines.get(number),
        out,
        |_| Ok::<(), Infallible>(()),
    )
    .map_err(|error| match error {
        ListError::Number(error) => MessageError::bits("entity number", error),
        ListError::Body { number, error } => MessageError::bits(format!("entity {number}"), error),
        ListError::Refused(never) => match never {},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cs_commands_update_configstrings() {
        let mut client = Q3Client::new();
        client.apply_server_command("cs 544 \"n\\Player\\t\\1\"\n");
        assert_eq!(client.configstring(544), "n\\Player\\t\\1");
        client.apply_server_command("bcs0 20 \"abc\"\n");
        client.apply_server_command("bcs1 20 \"def\"\n");
        client.apply_server_command("bcs2 20 \"ghi\"");
        assert_eq!(client.configstring(20), "abcdefghi");
        client.apply_server_command("cs 5000 \"ignored\"");
        client.apply_server_command("cs -1 \"ignored\"");
        client.apply_server_command("print \"not a configstring\"");
        assert_eq!(client.configstrings().count(), 2);
    }
}
