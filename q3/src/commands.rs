//! Configstring updates carried by reliable server commands.
//!
//! After the gamestate, Quake 3's server changes configstrings with text
//! commands: `cs <index> "<text>"`, or for text too long for one command
//! `bcs0 <index> "<first part>"`, `bcs1 <index> "<more>"` …
//! `bcs2 <index> "<last part>"`. The client applies them when its game
//! module fetches the command; here they are applied when first received,
//! which gives the same state after every message.

use crate::message::BIG_INFO_STRING;

/// Reassembles `bcs` pieces and turns `cs` commands into updates.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConfigstringCommands {
    /// `"<index> <text so far>"` while a `bcs` sequence is open.
    big: Option<String>,
}

impl ConfigstringCommands {
    /// The configstring update `text` makes, if any: (index, new text).
    /// Malformed updates (bad index, overlong `bcs`) are ignored: they are
    /// text for the game module, not protocol.
    pub(crate) fn apply(&mut self, text: &str) -> Option<(usize, String)> {
        let mut args = Tokens::new(text);
        match args.next()? {
            "cs" => {
                let index = atoi(args.next()?);
                let value = args.rest_joined();
                Some((usize::try_from(index).ok()?, value))
            }
            "bcs0" => {
                let index = args.next().unwrap_or("");
                let part = args.next().unwrap_or("");
                self.big = Some(format!("{index} {part}"));
                None
            }
            command @ ("bcs1" | "bcs2") => {
                let _index = args.next();
                let part = args.next().unwrap_or("");
                let big = self.big.as_mut()?;
                if big.len() + part.len() >= BIG_INFO_STRING {
                    self.big = None;
                    return None;
                }
                big.push_str(part);
                if command == "bcs1" {
                    return None;
                }
                let big = self.big.take()?;
                let (index, value) = big.split_once(' ').unwrap_or((&big, ""));
                Some((usize::try_from(atoi(index)).ok()?, value.to_owned()))
            }
            _ => None,
        }
    }
}

/// Whitespace-separated words with `"quoted strings"` as single words: the
/// part of Quake 3's command tokenizer that configstring commands use.
struct Tokens<'a> {
    rest: &'a str,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Self {
        Tokens { rest: text }
    }

    /// All remaining words joined by single spaces (`Cmd_ArgsFrom`).
    fn rest_joined(&mut self) -> String {
        let words: Vec<&str> = self.by_ref().collect();
        words.join(" ")
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let text = self.rest.trim_start_matches(|c: char| c <= ' ');
        if text.is_empty() {
            self.rest = text;
            return None;
        }
        if let Some(quoted) = text.strip_prefix('"') {
            let end = quoted.find('"').unwrap_or(quoted.len());
            self.rest = quoted.get(end + 1..).unwrap_or("");
            return Some(&quoted[..end]);
        }
        let end = text.find(|c: char| c <= ' ').unwrap_or(text.len());
        self.rest = &text[end..];
        Some(&text[..end])
    }
}

/// C's `atoi`: optional sign and leading digits, 0 when there are none.
fn atoi(text: &str) -> i64 {
    let text = text.trim_start();
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    let value = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .take(18)
        .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'));
    sign * value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_split_words_and_quoted_strings() {
        let words: Vec<_> = Tokens::new("cs 5 \"a b\\c\"\n").collect();
        assert_eq!(words, ["cs", "5", "a b\\c"]);
        let words: Vec<_> = Tokens::new("  print \"unterminated").collect();
        assert_eq!(words, ["print", "unterminated"]);
        assert_eq!(Tokens::new("").next(), None);
    }

    #[test]
    fn atoi_reads_leading_digits() {
        assert_eq!(atoi("529"), 529);
        assert_eq!(atoi("-3x"), -3);
        assert_eq!(atoi("x"), 0);
    }

    #[test]
    fn bcs_pieces_need_an_opening_piece() {
        let mut commands = ConfigstringCommands::default();
        assert_eq!(commands.apply("bcs2 3 \"orphan\""), None);
        assert_eq!(commands.apply("bcs0 3 \"a\""), None);
        assert_eq!(commands.apply("bcs2 3 \"b\""), Some((3, "ab".to_owned())));
    }
}
