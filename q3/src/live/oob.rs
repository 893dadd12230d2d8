//! Connectionless ("out-of-band") packets: four `0xff` bytes, then text.
//!
//! The client asks `getchallenge <client challenge> Quake3Arena`, the server
//! answers `challengeResponse <challenge> <client challenge> <protocol>`;
//! the client sends `connect ` followed by its quoted userinfo compressed
//! with Quake 3's adaptive Huffman code, the server answers
//! `connectResponse <challenge>` or `print` with the reason it refuses.
//! `getinfo`/`getstatus` ask for `infoResponse`/`statusResponse`.

use fields::huffman::adaptive_compress;

use super::error::LiveError;

/// The marker of a connectionless packet (a sequence number of -1).
pub const OOB_MARKER: [u8; 4] = [0xff; 4];

/// The game name a server checks in `getchallenge` (`com_gamename`).
pub const GAME_NAME: &str = "Quake3Arena";

/// Whether a datagram is connectionless.
pub fn is_oob(datagram: &[u8]) -> bool {
    datagram.starts_with(&OOB_MARKER)
}

/// A connectionless text packet.
pub fn text_packet(text: &str) -> Vec<u8> {
    let mut packet = OOB_MARKER.to_vec();
    packet.extend_from_slice(text.as_bytes());
    packet
}

/// The `getchallenge` request.
pub fn getchallenge(client_challenge: i32) -> Vec<u8> {
    text_packet(&format!("getchallenge {client_challenge} {GAME_NAME}"))
}

/// The `connect` packet: `connect ` then `"<userinfo>"` compressed.
pub fn connect(userinfo: &Userinfo) -> Result<Vec<u8>, LiveError> {
    let quoted = format!("\"{}\"", userinfo.as_str());
    let mut packet = text_packet("connect ");
    packet.extend_from_slice(&adaptive_compress(quoted.as_bytes())?);
    Ok(packet)
}

/// An info string (`\key\value\key\value`) in the order keys were set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Userinfo {
    text: String,
}

impl Userinfo {
    /// Sets `key` to `value`, replacing an earlier value. Characters Quake 3
    /// refuses in info strings (`\`, `;`, `"`) are dropped.
    pub fn set(&mut self, key: &str, value: &str) -> &mut Self {
        let clean = |s: &str| -> String {
            s.chars()
                .filter(|c| !matches!(c, '\\' | ';' | '"') && c.is_ascii() && !c.is_ascii_control())
                .collect()
        };
        let (key, value) = (clean(key), clean(value));
        let pairs: Vec<(String, String)> = info_pairs(&self.text)
            .filter(|(k, _)| *k != key)
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        self.text.clear();
        for (k, v) in pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain([(key.as_str(), value.as_str())])
        {
            self.text.push('\\');
            self.text.push_str(k);
            self.text.push('\\');
            self.text.push_str(v);
        }
        self
    }

    /// The info string.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// The `(key, value)` pairs of an info string.
pub fn info_pairs(info: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut parts = info.strip_prefix('\\').unwrap_or(info).split('\\');
    std::iter::from_fn(move || {
        let key = parts.next()?;
        let value = parts.next().unwrap_or("");
        Some((key, value))
    })
    .filter(|(k, _)| !k.is_empty())
}

/// The value of `key` in an info string (empty when absent), as
/// `Info_ValueForKey` (case-insensitive keys).
pub fn info_value<'a>(info: &'a str, key: &str) -> &'a str {
    info_pairs(info)
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map_or("", |(_, v)| v)
}

/// A connectionless packet from the server, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerOob {
    /// `challengeResponse`.
    ChallengeResponse {
        /// The server's challenge for this client.
        challenge: i32,
        /// The client challenge echoed, if sent.
        client_challenge: Option<i32>,
        /// The server's protocol, if sent.
        protocol: Option<u32>,
    },
    /// `connectResponse`.
    ConnectResponse {
        /// The challenge echoed (protocol 71).
        challenge: Option<i32>,
    },
    /// `print`: a message, usually why a connection is refused.
    Print(String),
    /// `infoResponse`: the server's info string.
    InfoResponse(String),
    /// `statusResponse`: the server's info string and one line per player.
    StatusResponse {
        /// The info string.
        info: String,
        /// `score ping "name"` lines.
        players: Vec<String>,
    },
    /// `disconnect` sent out of band.
    Disconnect,
    /// Anything else (its command word).
    Other(String),
}

/// Splits a line into words as Quake 3's tokenizer does for these packets:
/// whitespace-separated, double quotes group.
fn words(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return out;
        }
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').unwrap_or(quoted.len());
            out.push(&quoted[..end]);
            rest = quoted.get(end + 1..).unwrap_or("");
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            out.push(&rest[..end]);
            rest = &rest[end..];
        }
    }
}

/// `atoi`: leading sign and digits, 0 when there are none.
fn atoi(text: &str) -> i32 {
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => (-1i64, rest),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    let mut value: i64 = 0;
    for c in digits.chars().take_while(char::is_ascii_digit) {
        value = (value * 10 + i64::from(c as u8 - b'0')).min(i64::from(u32::MAX));
    }
    (sign * value) as i32
}

/// Parses a connectionless packet from the server (`None` if it is not one).
/// Bytes above 127 read as `.`, like `MSG_ReadStringLine`.
pub fn parse_server_oob(datagram: &[u8]) -> Option<ServerOob> {
    let body = datagram.strip_prefix(&OOB_MARKER)?;
    let body: String = body
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| if b > 127 || b == b'%' { '.' } else { b as char })
        .collect();
    let (line, rest) = body.split_once('\n').unwrap_or((&body, ""));
    let args = words(line);
    let command = args.first().copied().unwrap_or("");
    let arg = |i: usize| args.get(i).copied().filter(|s| !s.is_empty());
    Some(match command.to_ascii_lowercase().as_str() {
        "challengeresponse" => ServerOob::ChallengeResponse {
            challenge: atoi(arg(1).unwrap_or("")),
            client_challenge: arg(2).map(atoi),
            protocol: arg(3).map(|p| atoi(p) as u32),
        },
        "connectresponse" => ServerOob::ConnectResponse {
            challenge: arg(1).map(atoi),
        },
        "print" => ServerOob::Print(rest.to_owned()),
        "inforesponse" => ServerOob::InfoResponse(rest.trim_end_matches('\n').to_owned()),
        "statusresponse" => {
            let mut lines = rest.lines();
            let info = lines.next().unwrap_or("").to_owned();
            ServerOob::StatusResponse {
                info,
                players: lines.filter(|l| !l.is_empty()).map(str::to_owned).collect(),
            }
        }
        "disconnect" => ServerOob::Disconnect,
        _ => ServerOob::Other(command.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fields::huffman::adaptive_decompress;

    #[test]
    fn parses_the_server_answers() {
        assert_eq!(
            parse_server_oob(b"\xff\xff\xff\xffchallengeResponse 1114124564 123 71"),
            Some(ServerOob::ChallengeResponse {
                challenge: 1114124564,
                client_challenge: Some(123),
                protocol: Some(71)
            })
        );
        assert_eq!(
            parse_server_oob(b"\xff\xff\xff\xffconnectResponse -5"),
            Some(ServerOob::ConnectResponse {
                challenge: Some(-5)
            })
        );
        assert_eq!(
            parse_server_oob(b"\xff\xff\xff\xffprint\nServer is full.\n"),
            Some(ServerOob::Print("Server is full.\n".into()))
        );
        let status =
            parse_server_oob(b"\xff\xff\xff\xffstatusResponse\n\\mapname\\oa_dm1\n3 50 \"bot\"\n")
                .unwrap();
        assert_eq!(
            status,
            ServerOob::StatusResponse {
                info: "\\mapname\\oa_dm1".into(),
                players: vec!["3 50 \"bot\"".into()]
            }
        );
        assert_eq!(parse_server_oob(b"\x01\x00\x00\x00x"), None);
    }

    #[test]
    fn userinfo_replaces_keys_and_drops_bad_characters() {
        let mut info = Userinfo::default();
        info.set("name", "net\"q3;")
            .set("rate", "25000")
            .set("name", "a\\b");
        assert_eq!(info.as_str(), "\\rate\\25000\\name\\ab");
        assert_eq!(info_value(info.as_str(), "NAME"), "ab");
        assert_eq!(info_value(info.as_str(), "snaps"), "");
    }

    #[test]
    fn connect_packet_holds_the_quoted_userinfo() {
        let mut info = Userinfo::default();
        for (k, v) in [
            ("name", "netq3"),
            ("rate", "25000"),
            ("snaps", "20"),
            ("model", "sarge"),
            ("headmodel", "sarge"),
            ("protocol", "71"),
            ("qport", "1234"),
            ("challenge", "-99"),
        ] {
            info.set(k, v);
        }
        let packet = connect(&info).unwrap();
        assert!(packet.starts_with(b"\xff\xff\xff\xffconnect "));
        let text = adaptive_decompress(&packet[12..], 4096).unwrap();
        assert_eq!(text, format!("\"{}\"", info.as_str()).as_bytes());
        assert_eq!(atoi("-12x"), -12);
        assert_eq!(words(" a \"b c\" d"), vec!["a", "b c", "d"]);
    }
}
