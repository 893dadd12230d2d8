//! Connectionless requests a Quake 3 client sends a server: `getchallenge`,
//! `connect` (its userinfo compressed with Quake 3's adaptive Huffman code,
//! `Huff_Decompress` from byte 12), `getinfo` and `getstatus`.

use fields::huffman::adaptive_decompress;

use crate::live::oob::{info_value, OOB_MARKER};
use crate::message::MAX_STRING_CHARS;

/// Longest userinfo accepted (`MAX_INFO_STRING`).
pub const MAX_INFO_STRING: usize = 1024;

/// A connectionless request, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `getchallenge <client challenge> [game]`.
    GetChallenge {
        /// The client's challenge (echoed back).
        client_challenge: i32,
        /// The game name it plays (`com_gamename`), possibly empty.
        game: String,
    },
    /// `connect "<userinfo>"`.
    Connect {
        /// The userinfo string.
        userinfo: String,
    },
    /// `getinfo <challenge>`.
    GetInfo {
        /// Echoed back in the answer (at most 128 characters).
        challenge: String,
    },
    /// `getstatus <challenge>`.
    GetStatus {
        /// Echoed back in the answer (at most 128 characters).
        challenge: String,
    },
    /// Anything else (its first word).
    Other(String),
}

/// `atoi`: sign and leading digits, 0 without any.
pub fn atoi(text: &str) -> i32 {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let mut value: i64 = 0;
    for c in digits.bytes().take_while(u8::is_ascii_digit) {
        value = (value * 10 + i64::from(c - b'0')).min(i64::from(u32::MAX));
    }
    (if negative { -value } else { value }) as i32
}

/// Quake 3's text of a connectionless packet: bytes above 127 and `%` read
/// as `.`, up to a 0 byte.
fn text(bytes: &[u8]) -> String {
    bytes
        .iter()
        .take_while(|&&b| b != 0)
        .take(MAX_STRING_CHARS)
        .map(|&b| if b > 127 || b == b'%' { '.' } else { b as char })
        .collect()
}

/// Parses a connectionless datagram (`None` if it is not one, or a
/// `connect` whose userinfo does not decompress).
pub fn parse_request(datagram: &[u8]) -> Option<Request> {
    let body = datagram.strip_prefix(&OOB_MARKER)?;
    if body.len() >= 7 && body[..7].eq_ignore_ascii_case(b"connect") {
        // `connect ` then the compressed, quoted userinfo.
        let compressed = body.get(8..).unwrap_or(&[]);
        let raw = adaptive_decompress(compressed, MAX_INFO_STRING + 2).ok()?;
        let line = text(&raw);
        let userinfo = line.trim().trim_matches('"').to_owned();
        return Some(Request::Connect { userinfo });
    }
    let line = text(body);
    let mut words = line.split_whitespace();
    let command = words.next().unwrap_or("").to_ascii_lowercase();
    let argument = words.next().unwrap_or("");
    Some(match command.as_str() {
        "getchallenge" => Request::GetChallenge {
            client_challenge: atoi(argument),
            game: words.next().unwrap_or("").to_owned(),
        },
        "getinfo" => Request::GetInfo {
            challenge: argument.to_owned(),
        },
        "getstatus" => Request::GetStatus {
            challenge: argument.to_owned(),
        },
        _ => Request::Other(command),
    })
}

/// What a `connect` userinfo says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectInfo {
    /// `protocol`.
    pub protocol: i32,
    /// `qport`.
    pub qport: u16,
    /// `challenge`.
    pub challenge: i32,
    /// `name` (may be empty).
    pub name: String,
    /// `snaps` (snapshots per second asked for; 0 when absent).
    pub snaps: i32,
    /// `rate` (bytes per second; 0 when absent).
    pub rate: i32,
}

impl ConnectInfo {
    /// Reads the fields the relay needs from a userinfo string.
    pub fn from_userinfo(userinfo: &str) -> ConnectInfo {
        ConnectInfo {
            protocol: atoi(info_value(userinfo, "protocol")),
            qport: atoi(info_value(userinfo, "qport")) as u16,
            challenge: atoi(info_value(userinfo, "challenge")),
            name: info_value(userinfo, "name").chars().take(32).collect(),
            snaps: atoi(info_value(userinfo, "snaps")),
            rate: atoi(info_value(userinfo, "rate")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::oob::{connect, text_packet, Userinfo};

    #[test]
    fn parses_the_requests_a_client_sends() {
        assert_eq!(
            parse_request(&text_packet("getchallenge -42 Quake3Arena")),
            Some(Request::GetChallenge {
                client_challenge: -42,
                game: "Quake3Arena".into()
            })
        );
        assert_eq!(
            parse_request(&text_packet("getinfo xxx")),
            Some(Request::GetInfo {
                challenge: "xxx".into()
            })
        );
        assert_eq!(
            parse_request(&text_packet("getstatus")),
            Some(Request::GetStatus {
                challenge: String::new()
            })
        );
        assert_eq!(
            parse_request(&text_packet("rcon pw status")),
            Some(Request::Other("rcon".into()))
        );
        assert_eq!(parse_request(b"\x01\x00\x00\x00abc"), None);
        // Long enough for Quake 3's adaptive coder (short, varied strings
        // exceed its bound).
        let mut info = Userinfo::default();
        info.set("name", "viewer")
            .set("model", "sarge/default")
            .set("headmodel", "sarge/default")
            .set("protocol", "71")
            .set("qport", "4321")
            .set("challenge", "-77")
            .set("snaps", "40");
        let Some(Request::Connect { userinfo }) = parse_request(&connect(&info).unwrap()) else {
            panic!("a connect");
        };
        assert_eq!(userinfo, info.as_str());
        let parsed = ConnectInfo::from_userinfo(&userinfo);
        assert_eq!(
            (
                parsed.protocol,
                parsed.qport,
                parsed.challenge,
                parsed.snaps
            ),
            (71, 4321, -77, 40)
        );
        assert_eq!(parsed.name, "viewer");
        // A connect whose data does not decompress is no request.
        assert_eq!(parse_request(b"\xff\xff\xff\xffconnect \xff\xff\xff"), None);
    }
}
