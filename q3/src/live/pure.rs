//! The answer a client gives a pure server: the `cp` command.
//!
//! A pure server (`sv_pure 1`, ioquake3's default) lists in its system info
//! the paks it loaded (`sv_paks`: plain checksums in its search order, first
//! searched first; `sv_pakNames`: their base names) and the ones it
//! references (`sv_referencedPaks`, and `sv_referencedPakNames` as
//! `game/basename`), which a client must have. Paks are matched by checksum. After each gamestate the client sends
//! `cp <serverId> <cgame> <ui> @ <ref>… <encoded>`: the pure checksums (under
//! the gamestate's checksum feed) of the paks its cgame and UI came from,
//! then of the paks it referenced, then the feed XORed with each of those
//! references and with their count. The server checks that cgame and UI
//! are its own, that every reference is a pak it loaded, none twice, and
//! the encoded count; otherwise it drops the client as "Unpure client
//! detected".
//!
//! This client runs no cgame: it answers with the paks the server's own
//! search order gives for `vm/cgame.qvm` and `vm/ui.qvm`, and references
//! exactly the paks the server references.

use super::error::LiveError;
use super::oob::info_value;
use super::pak::{Pak, PakIndex};

/// What the `cp` answer is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PureAnswer {
    /// The command to send reliably.
    pub command: String,
    /// The pak the cgame comes from.
    pub cgame: String,
    /// The pak the UI comes from.
    pub ui: String,
    /// The paks referenced, in the server's order.
    pub referenced: Vec<String>,
}

/// The signed integers of a space-separated list (`atoi` of each word).
fn checksums(list: &str) -> Vec<i32> {
    list.split_whitespace()
        .map(|w| w.parse::<i64>().map_or(0, |v| v as i32))
        .collect()
}

fn searched(index: &PakIndex) -> String {
    if index.searched().is_empty() {
        "no base path".to_owned()
    } else {
        index
            .searched()
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The local pak whose plain checksum is `checksum`, or the error that
/// names what is missing (`name`: `game/basename` as the server lists it).
fn local<'a>(index: &'a PakIndex, name: &str, checksum: i32) -> Result<&'a Pak, LiveError> {
    index
        .by_checksum(checksum)
        .ok_or_else(|| LiveError::MissingPak {
            name: format!("{name}.pk3"),
            checksum,
            other_version: index.get(name).map(|p| p.path().display().to_string()),
            searched: searched(index),
        })
}

/// The `cp` answer to a gamestate whose system info is `systeminfo`, with
/// checksum `feed`, from the paks in `index`; `None` when the server is not
/// pure. A pak the server references that `index` lacks (or holds in
/// another version) is a [`LiveError::MissingPak`] naming it.
pub fn answer(
    systeminfo: &str,
    feed: i32,
    index: &PakIndex,
) -> Result<Option<PureAnswer>, LiveError> {
    if info_value(systeminfo, "sv_pure") != "1" {
        return Ok(None);
    }
    let server_id = info_value(systeminfo, "sv_serverid");
    let loaded = checksums(info_value(systeminfo, "sv_paks"));
    if loaded.is_empty() {
        return Err(LiveError::Pure(
            "the server is pure but lists no paks".into(),
        ));
    }
    let referenced = checksums(info_value(systeminfo, "sv_referencedPaks"));
    let referenced_names: Vec<&str> = info_value(systeminfo, "sv_referencedPakNames")
        .split_whitespace()
        .collect();
    if referenced.len() != referenced_names.len() {
        return Err(LiveError::Pure(format!(
            "the server lists {} referenced pak checksums for {} names",
            referenced.len(),
            referenced_names.len()
        )));
    }
    let mut references: Vec<&Pak> = Vec::with_capacity(referenced.len());
    for (&checksum, name) in referenced.iter().zip(&referenced_names) {
        let pak = local(index, name, checksum)?;
        if !references.iter().any(|p| p.checksum() == pak.checksum()) {
            references.push(pak);
        }
    }
    // The server's cgame and UI are in the first pak of its search order
    // that holds them (a referenced pak, so present by now).
    let holder = |file: &str| -> Result<&Pak, LiveError> {
        for &checksum in &loaded {
            if let Some(pak) = index.by_checksum(checksum) {
                if pak.contains(file) {
                    return Ok(pak);
                }
            }
        }
        Err(LiveError::Pure(format!(
            "none of the server's paks found locally holds {file} (searched {})",
            searched(index)
        )))
    };
    let cgame = holder("vm/cgame.qvm")?;
    let ui = holder("vm/ui.qvm")?;
    let mut command = format!(
        "cp {server_id} {} {} @",
        cgame.pure_checksum(feed),
        ui.pure_checksum(feed)
    );
    let mut encoded = feed;
    for pak in &references {
        let pure = pak.pure_checksum(feed);
        encoded ^= pure;
        command.push_str(&format!(" {pure}"));
    }
    encoded ^= references.len() as i32;
    command.push_str(&format!(" {encoded}"));
    Ok(Some(PureAnswer {
        command,
        cgame: cgame.name().to_owned(),
        ui: ui.name().to_owned(),
        referenced: references.iter().map(|p| p.name().to_owned()).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Write};
    use std::path::Path;
    use zip::write::SimpleFileOptions;

    fn pak(name: &str, files: &[(&str, &[u8])]) -> Pak {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let stored = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .last_modified_time(zip::DateTime::default());
        for (file, data) in files {
            zip.start_file(*file, stored).unwrap();
            zip.write_all(data).unwrap();
        }
        let bytes = zip.finish().unwrap().into_inner();
        Pak::from_reader(Cursor::new(bytes), Path::new(name), name).unwrap()
    }

    fn paks() -> (Pak, Pak, Pak) {
        (
            pak(
                "baseoa/pak0",
                &[("vm/cgame.qvm", b"old cgame"), ("vm/ui.qvm", b"ui")],
            ),
            pak("baseoa/pak1-maps", &[("maps/oa_dm1.bsp", b"bsp")]),
            pak("baseoa/pak6", &[("vm/cgame.qvm", b"new cgame")]),
        )
    }

    fn systeminfo(loaded: &[&Pak], referenced: &[&Pak], pure: bool) -> String {
        let list = |paks: &[&Pak], f: &dyn Fn(&Pak) -> String| {
            paks.iter().map(|p| f(p)).collect::<Vec<_>>().join(" ")
        };
        format!(
            "\\sv_serverid\\4242\\sv_pure\\{}\\sv_paks\\{}\\sv_pakNames\\{}\\sv_referencedPaks\\{}\\sv_referencedPakNames\\{}",
            u8::from(pure),
            list(loaded, &|p| p.checksum().to_string()),
            list(loaded, &|p| p.name().rsplit('/').next().unwrap().to_owned()),
            list(referenced, &|p| p.checksum().to_string()),
            list(referenced, &|p| p.name().to_owned()),
        )
    }

    #[test]
    fn the_answer_follows_the_servers_search_order_and_encodes_the_count() {
        let (p0, p1, p6) = paks();
        let index = PakIndex::from_paks([p0.clone(), p1.clone(), p6.clone()]);
        // Search order: pak6 first (it overrides pak0's cgame), then pak1, pak0.
        let info = systeminfo(&[&p6, &p1, &p0], &[&p6, &p1, &p0], true);
        let feed = -77;
        let answer = answer(&info, feed, &index).unwrap().unwrap();
        assert_eq!(answer.cgame, "baseoa/pak6");
        assert_eq!(answer.ui, "baseoa/pak0");
        let refs = [
            p6.pure_checksum(feed),
            p1.pure_checksum(feed),
            p0.pure_checksum(feed),
        ];
        let encoded = feed ^ refs[0] ^ refs[1] ^ refs[2] ^ 3;
        assert_eq!(
            answer.command,
            format!(
                "cp 4242 {} {} @ {} {} {} {encoded}",
                refs[0], refs[2], refs[0], refs[1], refs[2]
            )
        );
        // Not pure: no answer.
        let info = systeminfo(&[&p6, &p1, &p0], &[&p6], false);
        assert_eq!(super::answer(&info, feed, &index).unwrap(), None);
    }

    #[test]
    fn a_missing_or_different_pak_is_named() {
        let (p0, p1, p6) = paks();
        let info = systeminfo(&[&p6, &p1, &p0], &[&p6, &p1, &p0], true);
        let index = PakIndex::from_paks([p0.clone(), p1.clone()]);
        let error = answer(&info, 1, &index).unwrap_err().to_string();
        assert!(error.contains("baseoa/pak6.pk3"), "{error}");
        assert!(error.contains(&p6.checksum().to_string()), "{error}");
        // A pak of that name, but another version.
        let other = pak("baseoa/pak6", &[("vm/cgame.qvm", b"another cgame")]);
        let index = PakIndex::from_paks([p0, p1, other]);
        match answer(&info, 1, &index) {
            Err(LiveError::MissingPak {
                name,
                other_version: Some(_),
                ..
            }) => assert_eq!(name, "baseoa/pak6.pk3"),
            other => panic!("{other:?}"),
        }
    }
}
