//! A match's events, read from what a Quake 3 client receives: frags, chat,
//! score changes, CTF flag moves, and players joining, leaving and renaming.
//!
//! Where each comes from (facts of Quake 3's game code, shared by baseq3,
//! OSP and CPMA as far as the real demos show):
//!
//! * **Frags** are *temporary entities*: the server spawns an entity whose
//!   `eType` is `ET_EVENTS + EV_OBITUARY` (13 + 60), with the target in
//!   `otherEntityNum`, the attacker in `otherEntityNum2` (1022, the world,
//!   for falls, lava and the like) and the means of death in `eventParm`.
//!   It is broadcast to every client and stays in the snapshots for a few
//!   hundred milliseconds, so it is counted once, in the first snapshot
//!   that holds it (as the game's client does), never again while it stays.
//! * **Chat** lines are reliable server commands `chat "<line>"` and
//!   `tchat "<line>"` (team chat), each line normally `name^7: text`, and
//!   CPMA's team messages `mm2 <client> <location> "<text>"`.
//! * **Scores** are configstrings 6 and 7 (`CS_SCORES1`, `CS_SCORES2`): the
//!   red and blue team scores in team games, the two best players' scores
//!   otherwise. CPMA leaves those empty and keeps its team scores under `sr`
//!   and `sb` in configstring 672.
//! * **Flags** are configstring 23 (`CS_FLAGSTATUS`): one character per flag,
//!   red then blue: `0` at base, `1` taken, `2` dropped. A flag that goes
//!   from taken back to base was captured when the other team's score rises
//!   within [`CAPTURE_WINDOW_MS`] (CPMA sends the score a message later),
//!   else returned. The carrier is the player entity with that flag's
//!   powerup bit.
//! * **Players** are configstrings 544 onwards (`CS_PLAYERS`), an info string
//!   per client slot with the name under `n`: set means joined, emptied means
//!   left, a new name means renamed.
//!
//! [`EventTracker`] holds the state that turns those into [`Event`]s and is
//! fed by its caller, so the same logic serves `.dm_68` files
//! ([`Dm68Events`]) and native demos converted from them.

use serde::Serialize;

use crate::file::DecodedRecord;
use crate::info;
use crate::message::Command;
use crate::tables::EntityState;
use crate::Q3Client;

/// Configstring of the first score (`CS_SCORES1`).
pub const CS_SCORES1: usize = 6;
/// Configstring of the second score (`CS_SCORES2`).
pub const CS_SCORES2: usize = 7;
/// Configstring of the CTF flag status (`CS_FLAGSTATUS`).
pub const CS_FLAGSTATUS: usize = 23;
/// First player configstring (`CS_PLAYERS`).
pub const CS_PLAYERS: usize = 544;
/// Client slots (`MAX_CLIENTS`).
pub const MAX_CLIENTS: usize = 64;
/// First entity type of temporary event entities (`ET_EVENTS`).
pub const ET_EVENTS: i32 = 13;
/// The entity type of a player (`ET_PLAYER`).
pub const ET_PLAYER: i32 = 1;
/// The obituary event (`EV_OBITUARY`).
pub const EV_OBITUARY: i32 = 60;
/// The entity number of the world (`ENTITYNUM_WORLD`): the attacker of a
/// death nobody caused.
pub const ENTITYNUM_WORLD: u32 = 1022;
/// The powerup bit of a player carrying the red flag (`PW_REDFLAG`).
pub const PW_REDFLAG: u32 = 7;
/// The powerup bit of a player carrying the blue flag (`PW_BLUEFLAG`).
pub const PW_BLUEFLAG: u32 = 8;
/// The first team game type (`GT_TEAM`) in the serverinfo's `g_gametype`.
pub const GT_TEAM: i32 = 3;

/// The names of Quake 3's means of death (`meansOfDeath_t`, baseq3 as
/// built for protocol 68), by number.
pub const MEANS_OF_DEATH: [&str; 24] = [
    "MOD_UNKNOWN",
    "MOD_SHOTGUN",
    "MOD_GAUNTLET",
    "MOD_MACHINEGUN",
    "MOD_GRENADE",
    "MOD_GRENADE_SPLASH",
    "MOD_ROCKET",
    "MOD_ROCKET_SPLASH",
    "MOD_PLASMA",
    "MOD_PLASMA_SPLASH",
    "MOD_RAILGUN",
    "MOD_LIGHTNING",
    "MOD_BFG",
    "MOD_BFG_SPLASH",
    "MOD_WATER",
    "MOD_SLIME",
    "MOD_LAVA",
    "MOD_CRUSH",
    "MOD_TELEFRAG",
    "MOD_FALLING",
    "MOD_SUICIDE",
    "MOD_TARGET_LASER",
    "MOD_TRIGGER_HURT",
    "MOD_GRAPPLE",
];

/// The name of means of death `number` (`"MOD_<number>"` for values past
/// baseq3's list, which mods extend).
pub fn means_of_death_name(number: u32) -> String {
    MEANS_OF_DEATH
        .get(number as usize)
        .map_or_else(|| format!("MOD_{number}"), |name| (*name).to_string())
}

/// One event of the match.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// Server time (ms) of the snapshot it arrived with (or the last one
    /// before it, for commands in a message without a snapshot).
    pub server_time: i32,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What an [`Event`] is; serialized with a `"type"` key.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A death: every obituary, suicides and world deaths included.
    Frag {
        /// The killer's client number; `None` for the world.
        attacker: Option<u32>,
        /// The killer's name (colour codes removed), when known.
        attacker_name: Option<String>,
        /// Who died.
        target: u32,
        /// Their name, when known.
        target_name: Option<String>,
        /// The means of death's number (`eventParm`).
        means_of_death: u32,
        /// Its name ([`means_of_death_name`]).
        means: String,
        /// Whether the target killed themself (or the world did).
        suicide: bool,
    },
    /// A chat line.
    Chat {
        /// Team chat (`tchat`).
        team: bool,
        /// The speaker's name, when the line has the usual `name: text` form.
        name: Option<String>,
        /// The text without the name, colour codes removed.
        text: String,
        /// The whole line as sent.
        raw: String,
    },
    /// A score changed.
    Score {
        /// `CS_SCORES1`: red team score in team games, else the leader's.
        score1: i32,
        /// `CS_SCORES2`: blue team score, else the second-best player's
        /// (-9999 when nobody is second).
        score2: i32,
        /// Whether the two are team scores.
        teams: bool,
    },
    /// A CTF flag moved.
    Flag {
        /// Whose flag: `"red"` or `"blue"`.
        flag: &'static str,
        /// What happened to it.
        action: FlagAction,
        /// The player carrying it (take) or who carried it (capture, drop),
        /// when seen.
        client: Option<u32>,
        /// That player's name, when known.
        name: Option<String>,
    },
    /// A player slot was filled.
    Join {
        /// The client number.
        client: u32,
        /// The name.
        name: String,
    },
    /// A player slot was emptied.
    Leave {
        /// The client number.
        client: u32,
        /// The name it had.
        name: String,
    },
    /// A player changed name.
    Rename {
        /// The client number.
        client: u32,
        /// The old name.
        from: String,
        /// The new name.
        name: String,
    },
}

impl EventKind {
    /// The `"type"` string.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::Frag { .. } => "frag",
            EventKind::Chat { .. } => "chat",
            EventKind::Score { .. } => "score",
            EventKind::Flag { .. } => "flag",
            EventKind::Join { .. } => "join",
            EventKind::Leave { .. } => "leave",
            EventKind::Rename { .. } => "rename",
        }
    }
}

/// What happened to a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagAction {
    /// Picked up (from its base or from where it was dropped).
    Take,
    /// Brought to the carrier's base: the carrier's team scored.
    Capture,
    /// Back at its base without a capture.
    Return,
    /// Dropped by its carrier.
    Drop,
}

/// The fields of an entity the tracker reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventEntity {
    /// Entity number.
    pub number: u32,
    /// `eType`.
    pub e_type: i32,
    /// `eventParm`.
    pub event_parm: i32,
    /// `otherEntityNum`.
    pub other_entity_num: i32,
    /// `otherEntityNum2`.
    pub other_entity_num2: i32,
    /// `powerups` bits.
    pub powerups: i32,
}

impl EventEntity {
    /// The fields of a Quake 3 entity state numbered `number`.
    pub fn of(number: u32, state: &EntityState) -> Self {
        EventEntity {
            number,
            e_type: state.e_type,
            event_parm: state.event_parm,
            other_entity_num: state.other_entity_num,
            other_entity_num2: state.other_entity_num2,
            powerups: state.powerups,
        }
    }

    fn is_obituary(&self) -> bool {
        self.e_type == ET_EVENTS + EV_OBITUARY
    }
}

/// A flag that went from its carrier back to base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PendingFlag {
    time: i32,
    client: Option<u32>,
}

/// How long after a flag returns to base from its carrier the other team's
/// score may rise for it to count as a capture (CPMA announces the score a
/// message or two after the flag status).
pub const CAPTURE_WINDOW_MS: i32 = 1000;

/// CPMA's game-information configstring, whose `sr` and `sb` keys are the
/// red and blue scores in its team modes.
pub const CS_CPMA_GAME_INFO: usize = 672;

/// The scores a game shows: `CS_SCORES1` and `CS_SCORES2` (baseq3, OSP), or
/// CPMA's red and blue scores.
fn read_scores<'a>(configstring: &impl Fn(usize) -> &'a str) -> Option<(i32, i32, bool)> {
    let int = |text: &str| text.trim().parse::<i32>().ok();
    if let (Some(a), Some(b)) = (int(configstring(CS_SCORES1)), int(configstring(CS_SCORES2))) {
        return Some((a, b, false));
    }
    let cpma = configstring(CS_CPMA_GAME_INFO);
    let red = info::value(cpma, "sr").and_then(int)?;
    let blue = info::value(cpma, "sb").and_then(int)?;
    Some((red, blue, true))
}

/// Inserts `event` after every event of `out` at or before its time.
fn insert_in_order(out: &mut Vec<Event>, event: Event) {
    let at = out
        .iter()
        .rposition(|e| e.server_time <= event.server_time)
        .map_or(0, |i| i + 1);
    out.insert(at, event);
}

/// Turns what a client receives into [`Event`]s. Call
/// [`gamestate`](Self::gamestate) on every gamestate, then per message
/// [`server_command`](Self::server_command) for each new reliable command,
/// [`configstrings`](Self::configstrings) once after its commands, and
/// [`snapshot`](Self::snapshot) for each valid snapshot.
#[derive(Debug, Clone, Default)]
pub struct EventTracker {
    /// The first player configstring.
    players_base: usize,
    names: Vec<Option<String>>,
    scores: Option<(i32, i32)>,
    flags: String,
    teams: bool,
    /// Flags (red, blue) back at base from a carrier, waiting for the other
    /// team's score to tell a capture from a return.
    pending: [Option<PendingFlag>; 2],
    /// Obituary entities of the previous snapshot, to count each once.
    previous_obituaries: Vec<EventEntity>,
    obituaries: Vec<EventEntity>,
    /// Flag carriers seen in the last snapshot: (red, blue).
    carriers: (Option<u32>, Option<u32>),
    time: i32,
}

impl EventTracker {
    /// A tracker that has seen nothing.
    pub fn new() -> Self {
        Self::with_players_at(CS_PLAYERS)
    }

    /// A tracker for a game that keeps its player configstrings (info
    /// strings with the name under `n`) from index `base` on, instead of
    /// Quake 3's [`CS_PLAYERS`].
    pub fn with_players_at(base: usize) -> Self {
        EventTracker {
            players_base: base,
            names: vec![None; MAX_CLIENTS],
            ..EventTracker::default()
        }
    }

    /// The server time events are stamped with now.
    pub fn time(&self) -> i32 {
        self.time
    }

    /// Sets the time of what follows (the snapshot time of the message
    /// about to be fed).
    pub fn set_time(&mut self, server_time: i32) {
        self.time = server_time;
    }

    /// The current name of client `client` (colour codes removed).
    pub fn name(&self, client: u32) -> Option<&str> {
        self.names.get(client as usize)?.as_deref()
    }

    /// A new gamestate: the players, scores and flags it holds are the
    /// starting point (no events), and no obituary is pending.
    pub fn gamestate<'a>(&mut self, configstring: impl Fn(usize) -> &'a str) {
        for (client, slot) in self.names.iter_mut().enumerate() {
            *slot = player_name(configstring(self.players_base + client));
        }
        self.teams = info::value(configstring(0), "g_gametype")
            .and_then(|g| g.trim().parse::<i32>().ok())
            .is_some_and(|g| g >= GT_TEAM);
        self.scores = read_scores(&configstring).map(|(a, b, _)| (a, b));
        self.flags = configstring(CS_FLAGSTATUS).to_string();
        self.previous_obituaries.clear();
        self.carriers = (None, None);
        self.pending = [None, None];
    }

    /// The end of the demo: a flag still waiting to be told captured or
    /// returned was returned.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        self.expire(i32::MAX, out);
    }

    /// Pending flags whose window closed before `now` were returned.
    fn expire(&mut self, now: i32, out: &mut Vec<Event>) {
        for index in 0..2 {
            if let Some(pending) = self.pending[index] {
                if now.saturating_sub(pending.time) > CAPTURE_WINDOW_MS {
                    self.pending[index] = None;
                    insert_in_order(
                        out,
                        self.flag_event(index, FlagAction::Return, pending.time, None),
                    );
                }
            }
        }
    }

    fn flag_event(
        &self,
        index: usize,
        action: FlagAction,
        time: i32,
        client: Option<u32>,
    ) -> Event {
        Event {
            server_time: time,
            kind: EventKind::Flag {
                flag: if index == 0 { "red" } else { "blue" },
                action,
                client,
                name: client.and_then(|c| self.name(c).map(str::to_string)),
            },
        }
    }

    /// A new reliable server command (repeats must not be fed).
    pub fn server_command(&mut self, text: &str, out: &mut Vec<Event>) {
        let (command, rest) = text.split_once(' ').unwrap_or((text, ""));
        let team = match command {
            "chat" => false,
            "tchat" => true,
            "mm2" => return self.cpma_team_message(rest, out),
            _ => return,
        };
        let raw = first_argument(rest);
        let (name, said) = split_speaker(&raw);
        out.push(Event {
            server_time: self.time,
            kind: EventKind::Chat {
                team,
                name,
                text: strip_colors(said),
                raw,
            },
        });
    }

    /// CPMA's team message `mm2 <client> <location> "<text>"` (the
    /// speaker is a client number, not part of the text).
    fn cpma_team_message(&mut self, rest: &str, out: &mut Vec<Event>) {
        let mut words = rest.splitn(3, ' ');
        let client = words.next().and_then(|c| c.parse::<u32>().ok());
        let _location = words.next();
        let raw = first_argument(words.next().unwrap_or(""));
        out.push(Event {
            server_time: self.time,
            kind: EventKind::Chat {
                team: true,
                name: client.and_then(|c| self.name(c).map(str::to_string)),
                text: strip_colors(&raw),
                raw,
            },
        });
    }

    /// The configstrings after a message's commands: reports what changed.
    pub fn configstrings<'a>(
        &mut self,
        configstring: impl Fn(usize) -> &'a str,
        out: &mut Vec<Event>,
    ) {
        self.expire(self.time, out);
        self.players(&configstring, out);
        let new_scores = read_scores(&configstring);
        let old_scores = self.scores;
        if let Some((score1, score2, cpma)) = new_scores {
            if old_scores != Some((score1, score2)) {
                self.scores = Some((score1, score2));
                out.push(Event {
                    server_time: self.time,
                    kind: EventKind::Score {
                        score1,
                        score2,
                        teams: self.teams || cpma,
                    },
                });
            }
        }
        let rose = |index: usize| match (old_scores, self.scores) {
            (Some(old), Some(new)) if index == 0 => new.0 > old.0,
            (Some(old), Some(new)) => new.1 > old.1,
            _ => false,
        };
        // A flag taken home earlier whose capture the score now shows.
        for index in 0..2 {
            let scorer = 1 - index;
            if let Some(pending) = self.pending[index].filter(|_| rose(scorer)) {
                self.pending[index] = None;
                let event =
                    self.flag_event(index, FlagAction::Capture, pending.time, pending.client);
                insert_in_order(out, event);
            }
        }
        let flags = configstring(CS_FLAGSTATUS).to_string();
        if flags != self.flags {
            for (index, (old, new)) in self.flags.chars().zip(flags.chars()).take(2).enumerate() {
                let carrier = if index == 0 {
                    self.carriers.0
                } else {
                    self.carriers.1
                };
                let action = match (old, new) {
                    ('0' | '2', '1') => FlagAction::Take,
                    ('1', '2') | ('0', '2') => FlagAction::Drop,
                    ('2', '0') => FlagAction::Return,
                    ('1', '0') if rose(1 - index) => FlagAction::Capture,
                    ('1', '0') => {
                        // Captured or returned: the score will tell.
                        self.pending[index] = Some(PendingFlag {
                            time: self.time,
                            client: carrier,
                        });
                        continue;
                    }
                    _ => continue,
                };
                // A take is known to the carrier only from the next snapshot.
                let client = matches!(action, FlagAction::Drop | FlagAction::Capture)
                    .then_some(carrier)
                    .flatten();
                out.push(self.flag_event(index, action, self.time, client));
            }
            self.flags = flags;
        }
    }

    fn players<'a>(&mut self, configstring: &impl Fn(usize) -> &'a str, out: &mut Vec<Event>) {
        for client in 0..MAX_CLIENTS {
            let new = player_name(configstring(self.players_base + client));
            let old = &mut self.names[client];
            if *old == new {
                continue;
            }
            let number = client as u32;
            let kind = match (old.take(), &new) {
                (None, Some(name)) => EventKind::Join {
                    client: number,
                    name: name.clone(),
                },
                (Some(name), None) => EventKind::Leave {
                    client: number,
                    name,
                },
                (Some(from), Some(name)) => EventKind::Rename {
                    client: number,
                    from,
                    name: name.clone(),
                },
                (None, None) => continue,
            };
            *old = new;
            out.push(Event {
                server_time: self.time,
                kind,
            });
        }
    }

    /// A valid snapshot's entities, in any order: new obituaries become frags.
    pub fn snapshot(
        &mut self,
        entities: impl IntoIterator<Item = EventEntity>,
        out: &mut Vec<Event>,
    ) {
        self.expire(self.time, out);
        self.obituaries.clear();
        let mut carriers = (None, None);
        for entity in entities {
            if entity.is_obituary() {
                self.obituaries.push(entity);
            } else if entity.e_type == ET_PLAYER {
                let bits = entity.powerups as u32;
                if bits & (1 << PW_REDFLAG) != 0 {
                    carriers.0 = Some(entity.number);
                }
                if bits & (1 << PW_BLUEFLAG) != 0 {
                    carriers.1 = Some(entity.number);
                }
            }
        }
        self.carriers = carriers;
        self.obituaries.sort_unstable_by_key(|e| e.number);
        for index in 0..self.obituaries.len() {
            let entity = self.obituaries[index];
            // The same temporary entity seen again: already counted.
            if self.previous_obituaries.contains(&entity) {
                continue;
            }
            let target = entity.other_entity_num as u32;
            let attacker =
                Some(entity.other_entity_num2 as u32).filter(|&a| (a as usize) < MAX_CLIENTS);
            let means_of_death = entity.event_parm as u32;
            out.push(Event {
                server_time: self.time,
                kind: EventKind::Frag {
                    attacker,
                    attacker_name: attacker.and_then(|a| self.name(a).map(str::to_string)),
                    target,
                    target_name: self.name(target).map(str::to_string),
                    means_of_death,
                    means: means_of_death_name(means_of_death),
                    suicide: attacker.is_none_or(|a| a == target),
                },
            });
        }
        std::mem::swap(&mut self.previous_obituaries, &mut self.obituaries);
    }
}

/// The events of a `.dm_68` file, record by record: feed each
/// [`DecodedRecord`] with the decoder's client after it.
///
/// ```no_run
/// use netq3_q3::events::Dm68Events;
/// use netq3_q3::Dm68Decoder;
///
/// let data = std::fs::read("match.dm_68")?;
/// let mut decoder = Dm68Decoder::new(&data)?;
/// let (mut events, mut found) = (Dm68Events::new(), Vec::new());
/// while let Some(record) = decoder.next() {
///     events.push(&record?, decoder.client(), &mut found);
/// }
/// events.finish(&mut found);
/// println!("{} events", found.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Dm68Events {
    tracker: EventTracker,
}

impl Dm68Events {
    /// Before the first record.
    pub fn new() -> Self {
        Dm68Events {
            tracker: EventTracker::new(),
        }
    }

    /// The tracker (names of the players, time).
    pub fn tracker(&self) -> &EventTracker {
        &self.tracker
    }

    /// After the last record: settles what was still undecided (a flag
    /// back at base with no score seen yet was returned).
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        self.tracker.finish(out);
    }

    /// Adds the events of one record to `out`; `client` is the decoder's
    /// state after it.
    pub fn push(&mut self, decoded: &DecodedRecord<'_>, client: &Q3Client, out: &mut Vec<Event>) {
        let message = &decoded.message;
        if let Some(snap) = message.snapshots().next() {
            self.tracker.set_time(snap.snapshot.server_time);
        }
        let mut configstrings_changed = false;
        for command in &message.commands {
            match &command.command {
                Command::Gamestate(_) => {
                    self.tracker.gamestate(|i| client.configstring(i));
                }
                Command::ServerCommand(text) if text.is_new => {
                    self.tracker.server_command(&text.text, out);
                    configstrings_changed |=
                        text.text.starts_with("cs ") || text.text.starts_with("bcs2 ");
                }
                Command::Configstring { .. } => configstrings_changed = true,
                _ => {}
            }
        }
        if configstrings_changed {
            self.tracker.configstrings(|i| client.configstring(i), out);
        }
        for snap in message.snapshots() {
            if snap.snapshot.is_valid() {
                let entities = snap.snapshot.entities.iter();
                self.tracker
                    .snapshot(entities.map(|(n, s)| EventEntity::of(*n, s)), out);
            }
        }
    }
}

/// The name in a player configstring, colour codes removed; `None` for an
/// empty slot.
fn player_name(configstring: &str) -> Option<String> {
    if configstring.is_empty() {
        return None;
    }
    Some(strip_colors(info::value(configstring, "n").unwrap_or("")))
}

/// `text` without Quake 3 colour codes (`^` and a character), OSP's
/// `^xRRGGBB` colours and control characters (the game puts an escape
/// character, 0x19, after the speaker's name in chat lines).
pub fn strip_colors(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'^' && i + 1 < bytes.len() && bytes[i + 1] != b'^' {
            let extended = matches!(bytes[i + 1], b'x' | b'X')
                && bytes.len() >= i + 8
                && bytes[i + 2..i + 8].iter().all(u8::is_ascii_hexdigit);
            i += if extended { 8 } else { 2 };
            continue;
        }
        // Strings from the parser are ASCII: one byte is one char.
        if !bytes[i].is_ascii_control() {
            out.push(bytes[i] as char);
        }
        i += 1;
    }
    out
}

/// The first argument of a command's arguments: a `"quoted string"` (up
/// to its closing quote) or the first word.
fn first_argument(rest: &str) -> String {
    let rest = rest.trim_start();
    match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next().unwrap_or("").to_string(),
        None => rest.split_whitespace().next().unwrap_or("").to_string(),
    }
}

/// `("name", "text")` of a chat line `name^7: text` (team chat wraps the
/// name in parentheses); the whole line when there is no `: `.
fn split_speaker(line: &str) -> (Option<String>, &str) {
    match line.split_once(": ") {
        Some((name, text)) => {
            let name = strip_colors(name);
            let name = name.trim();
            let name = name
                .strip_prefix('(')
                .and_then(|n| n.strip_suffix(')'))
                .unwrap_or(name);
            (Some(name.to_string()), text)
        }
        None => (None, line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn players(names: &[(usize, &str)]) -> impl Fn(usize) -> &'static str {
        let mut table = vec![""; 1024];
        for (client, cs) in names {
            table[CS_PLAYERS + client] = Box::leak(cs.to_string().into_boxed_str());
        }
        move |i| table[i]
    }

    #[test]
    fn colours_are_stripped() {
        assert_eq!(strip_colors("^1Red^7 and ^xff0000hex^^"), "Red and hex^^");
        assert_eq!(strip_colors("end^"), "end^");
        assert_eq!(strip_colors("^Xzz"), "zz");
        assert_eq!(strip_colors("Name^7\u{19}: hi"), "Name: hi");
    }

    #[test]
    fn chat_lines_are_split_into_speaker_and_text() {
        let mut tracker = EventTracker::new();
        let mut out = Vec::new();
        tracker.set_time(1000);
        tracker.server_command("chat \"myT^7: ^2hf\"", &mut out);
        tracker.server_command("tchat \"(^1Bob^7): ^5incoming\" 0", &mut out);
        tracker.server_command("print \"not chat\"", &mut out);
        tracker.server_command("chat \"no speaker\"", &mut out);
        let texts: Vec<_> = out
            .iter()
            .map(|e| match &e.kind {
                EventKind::Chat {
                    team, name, text, ..
                } => (*team, name.clone(), text.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            texts,
            [
                (false, Some("myT".into()), "hf".into()),
                (true, Some("Bob".into()), "incoming".into()),
                (false, None, "no speaker".into()),
            ]
        );
        assert!(out.iter().all(|e| e.server_time == 1000));
    }

    #[test]
    fn player_configstrings_give_joins_renames_and_leaves() {
        let mut tracker = EventTracker::new();
        let mut out = Vec::new();
        tracker.gamestate(players(&[(0, "n\\Alice\\t\\0")]));
        assert_eq!(tracker.name(0), Some("Alice"));
        tracker.configstrings(
            players(&[(0, "n\\Alice\\t\\0"), (3, "n\\^1Bob\\t\\1")]),
            &mut out,
        );
        tracker.configstrings(
            players(&[(0, "n\\Alice\\t\\1"), (3, "n\\Rob\\t\\1")]),
            &mut out,
        );
        tracker.configstrings(players(&[(3, "n\\Rob\\t\\1")]), &mut out);
        let kinds: Vec<_> = out.into_iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                EventKind::Join {
                    client: 3,
                    name: "Bob".into()
                },
                EventKind::Rename {
                    client: 3,
                    from: "Bob".into(),
                    name: "Rob".into()
                },
                EventKind::Leave {
                    client: 0,
                    name: "Alice".into()
                },
            ]
        );
    }

    fn ctf(
        flags: &'static str,
        red: &'static str,
        blue: &'static str,
    ) -> impl Fn(usize) -> &'static str {
        move |i| match i {
            0 => "\\g_gametype\\4",
            CS_SCORES1 => red,
            CS_SCORES2 => blue,
            CS_FLAGSTATUS => flags,
            _ => "",
        }
    }

    #[test]
    fn flag_status_gives_takes_drops_returns_and_captures() {
        let mut tracker = EventTracker::new();
        let mut out = Vec::new();
        tracker.gamestate(ctf("00", "0", "0"));
        let carrier = EventEntity {
            number: 5,
            e_type: ET_PLAYER,
            powerups: 1 << PW_REDFLAG,
            ..EventEntity::default()
        };
        // Blue's player takes the red flag, drops it, takes it again and captures.
        tracker.configstrings(ctf("10", "0", "0"), &mut out);
        tracker.snapshot([carrier], &mut out);
        tracker.configstrings(ctf("20", "0", "0"), &mut out);
        tracker.configstrings(ctf("10", "0", "0"), &mut out);
        tracker.snapshot([carrier], &mut out);
        tracker.configstrings(ctf("00", "0", "1"), &mut out);
        // Red takes blue's flag; it is dropped and returned; taken and
        // returned without a score (the carrier left).
        tracker.configstrings(ctf("01", "0", "1"), &mut out);
        tracker.configstrings(ctf("02", "0", "1"), &mut out);
        tracker.configstrings(ctf("00", "0", "1"), &mut out);
        tracker.configstrings(ctf("01", "0", "1"), &mut out);
        tracker.configstrings(ctf("00", "0", "1"), &mut out);
        tracker.finish(&mut out);
        let flags: Vec<_> = out
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Flag {
                    flag,
                    action,
                    client,
                    ..
                } => Some((*flag, *action, *client)),
                _ => None,
            })
            .collect();
        use FlagAction::*;
        assert_eq!(
            flags,
            [
                ("red", Take, None),
                ("red", Drop, Some(5)),
                ("red", Take, None),
                ("red", Capture, Some(5)),
                ("blue", Take, None),
                ("blue", Drop, None),
                ("blue", Return, None),
                ("blue", Take, None),
                ("blue", Return, None),
            ]
        );
        let scores: Vec<_> = out
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::Score {
                    score1,
                    score2,
                    teams,
                } => Some((score1, score2, teams)),
                _ => None,
            })
            .collect();
        assert_eq!(scores, [(0, 1, true)]);
    }

    fn cpma(flags: &'static str, game_info: &'static str) -> impl Fn(usize) -> &'static str {
        move |i| match i {
            CS_CPMA_GAME_INFO => game_info,
            CS_FLAGSTATUS => flags,
            _ => "",
        }
    }

    #[test]
    fn a_score_a_message_after_the_flag_makes_a_capture_and_none_a_return() {
        let mut tracker = EventTracker::new();
        let mut out = Vec::new();
        tracker.gamestate(cpma("00", "sb\\0\\sr\\0\\pb\\4"));
        tracker.set_time(1000);
        tracker.configstrings(cpma("01", "sb\\0\\sr\\0\\pb\\4"), &mut out);
        tracker.set_time(8000);
        tracker.configstrings(cpma("00", "sb\\0\\sr\\0\\pb\\4"), &mut out);
        tracker.set_time(8100);
        tracker.snapshot([], &mut out);
        tracker.configstrings(cpma("00", "sb\\0\\sr\\3\\pb\\4"), &mut out);
        // Taken again and home with no score: a return, once the window closed.
        tracker.set_time(20_000);
        tracker.configstrings(cpma("01", "sb\\0\\sr\\3\\pb\\4"), &mut out);
        tracker.set_time(21_000);
        tracker.configstrings(cpma("00", "sb\\0\\sr\\3\\pb\\4"), &mut out);
        tracker.set_time(30_000);
        tracker.snapshot([], &mut out);
        let seen: Vec<_> = out
            .iter()
            .map(|e| match &e.kind {
                EventKind::Flag { flag, action, .. } => {
                    (e.server_time, format!("{flag} {action:?}"))
                }
                EventKind::Score {
                    score1,
                    score2,
                    teams,
                } => (e.server_time, format!("score {score1} {score2} {teams}")),
                other => panic!("{other:?}"),
            })
            .collect();
        let expected: Vec<(i32, String)> = [
            (1000, "blue Take"),
            (8000, "blue Capture"),
            (8100, "score 3 0 true"),
            (20_000, "blue Take"),
            (21_000, "blue Return"),
        ]
        .iter()
        .map(|(t, s)| (*t, s.to_string()))
        .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn cpma_team_messages_are_team_chat() {
        let mut tracker = EventTracker::new();
        tracker.gamestate(players(&[(7, "n\\^1Ann")]));
        let mut out = Vec::new();
        tracker.server_command("mm2 7 22 \"TOOK ^1RED\"", &mut out);
        assert_eq!(
            out[0].kind,
            EventKind::Chat {
                team: true,
                name: Some("Ann".into()),
                text: "TOOK RED".into(),
                raw: "TOOK ^1RED".into()
            }
        );
    }

    #[test]
    fn an_obituary_counts_once_while_it_stays_in_view() {
        let mut tracker = EventTracker::new();
        tracker.gamestate(players(&[(1, "n\\A"), (2, "n\\B")]));
        let obituary = |number, target, attacker, means| EventEntity {
            number,
            e_type: ET_EVENTS + EV_OBITUARY,
            event_parm: means,
            other_entity_num: target,
            other_entity_num2: attacker,
            powerups: 0,
        };
        let mut out = Vec::new();
        let a = obituary(200, 2, 1, 10);
        let world = obituary(201, 1, ENTITYNUM_WORLD as i32, 19);
        tracker.snapshot([a], &mut out);
        tracker.snapshot([a, world], &mut out);
        tracker.snapshot([world], &mut out);
        tracker.snapshot([], &mut out);
        // The same slot reused by a new obituary after a gap.
        tracker.snapshot([a], &mut out);
        let frags: Vec<_> = out
            .iter()
            .map(|e| match &e.kind {
                EventKind::Frag {
                    attacker,
                    target,
                    means,
                    suicide,
                    attacker_name,
                    ..
                } => (
                    *attacker,
                    *target,
                    means.as_str(),
                    *suicide,
                    attacker_name.clone(),
                ),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            frags,
            [
                (Some(1), 2, "MOD_RAILGUN", false, Some("A".into())),
                (None, 1, "MOD_FALLING", true, None),
                (Some(1), 2, "MOD_RAILGUN", false, Some("A".into())),
            ]
        );
    }
}
