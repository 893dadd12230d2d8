//! Quake 3 info strings: `\key\value\key\value`, as in the serverinfo
//! configstring, userinfo and the `getinfo` / `getstatus` replies.

/// The value of `key` (compared without regard to ASCII case, as Quake 3's
/// `Info_ValueForKey` does) in an info string, if present.
pub fn value<'a>(info: &'a str, key: &str) -> Option<&'a str> {
    let mut parts = info.strip_prefix('\\').unwrap_or(info).split('\\');
    while let (Some(k), Some(v)) = (parts.next(), parts.next()) {
        if k.eq_ignore_ascii_case(key) {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_strings_are_searched_by_key() {
        let info = r"\mapname\q3dm17\sv_hostname\Test\g_gametype\1";
        assert_eq!(value(info, "mapname"), Some("q3dm17"));
        assert_eq!(value(info, "G_GAMETYPE"), Some("1"));
        assert_eq!(value(info, "missing"), None);
        assert_eq!(value(r"\lonely", "lonely"), None);
    }
}
