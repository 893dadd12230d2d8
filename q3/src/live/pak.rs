//! Quake 3's `.pk3` files as a pure server sees them: their checksums and
//! the files they hold.
//!
//! A pak's checksum is made from the CRC-32 of every entry of non-zero
//! (uncompressed) size, in central-directory order, taken as little-endian
//! 32-bit words: MD4 over those words, the digest's four little-endian words
//! XORed together ([`block_checksum`]). The *plain* checksum
//! ([`Pak::checksum`]) is what a pure server lists in `sv_paks`; the *pure*
//! checksum ([`Pak::pure_checksum`]) puts the server's checksum feed (sent
//! with each gamestate) before the CRCs, so an answer cannot be replayed
//! from an earlier map. Only the zip's central directory is read.
//!
//! [`PakIndex`] holds the paks found under one or more base paths (each
//! holding game folders such as `baseoa/`, like ioquake3's `fs_basepath`),
//! named `baseoa/pak0` as servers name referenced paks; they are matched to
//! a server's lists by checksum.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::{Path, PathBuf};

use md4::{Digest, Md4};
use thiserror::Error;

/// Why a pak could not be read.
#[derive(Debug, Error)]
pub enum PakError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// Not a readable zip file.
    #[error("{path}: not a readable zip file: {source}")]
    Zip {
        /// The file.
        path: PathBuf,
        /// What the zip reader said.
        #[source]
        source: zip::result::ZipError,
    },
}

/// Quake 3's `Com_BlockChecksum` over little-endian 32-bit words: the MD4
/// digest of their bytes, its four little-endian words XORed.
pub fn block_checksum(words: impl IntoIterator<Item = u32>) -> i32 {
    let mut md4 = Md4::new();
    for word in words {
        md4.update(word.to_le_bytes());
    }
    let digest = md4.finalize();
    digest
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .fold(0, |acc, w| acc ^ w) as i32
}

/// One `.pk3` file: its name, the CRCs its checksums are made of, and the
/// names of the files it holds.
#[derive(Debug, Clone)]
pub struct Pak {
    name: String,
    path: PathBuf,
    crcs: Vec<u32>,
    files: HashSet<String>,
    checksum: i32,
}

impl Pak {
    /// Reads the pak at `path`, named `game/basename` (e.g. `baseoa/pak0`).
    pub fn open(path: &Path, name: &str) -> Result<Pak, PakError> {
        let file = File::open(path).map_err(|source| PakError::Io {
            path: path.to_owned(),
            source,
        })?;
        Pak::from_reader(BufReader::new(file), path, name)
    }

    /// Reads a pak from `reader` (`path` is only for messages).
    pub fn from_reader<R: Read + Seek>(
        reader: R,
        path: &Path,
        name: &str,
    ) -> Result<Pak, PakError> {
        let zip_error = |source| PakError::Zip {
            path: path.to_owned(),
            source,
        };
        let mut archive = zip::ZipArchive::new(reader).map_err(zip_error)?;
        let mut crcs = Vec::with_capacity(archive.len());
        let mut files = HashSet::with_capacity(archive.len());
        for index in 0..archive.len() {
            let entry = archive.by_index_raw(index).map_err(zip_error)?;
            if entry.size() > 0 {
                crcs.push(entry.crc32());
            }
            // Quake 3 looks files up case-insensitively.
            files.insert(entry.name().to_ascii_lowercase());
        }
        let checksum = block_checksum(crcs.iter().copied());
        Ok(Pak {
            name: name.to_owned(),
            path: path.to_owned(),
            crcs,
            files,
            checksum,
        })
    }

    /// Its name as servers list it (`sv_pakNames`): `game/basename`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The plain checksum (`sv_paks`, `sv_referencedPaks`).
    pub fn checksum(&self) -> i32 {
        self.checksum
    }

    /// The pure checksum under the server's checksum `feed`.
    pub fn pure_checksum(&self, feed: i32) -> i32 {
        block_checksum(std::iter::once(feed as u32).chain(self.crcs.iter().copied()))
    }

    /// Whether it holds `file` (a path such as `vm/cgame.qvm`; any case).
    pub fn contains(&self, file: &str) -> bool {
        self.files.contains(&file.to_ascii_lowercase())
    }
}

/// The paks found under some base paths, by name (`baseoa/pak0`).
#[derive(Debug, Clone, Default)]
pub struct PakIndex {
    paks: BTreeMap<String, Pak>,
    searched: Vec<PathBuf>,
}

/// Where Debian's packages put Quake 3 and OpenArena data, then the players'
/// own folders, in that order.
pub fn default_basepaths() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = [
        "/usr/lib/openarena",
        "/usr/lib/openarena-server",
        "/usr/share/games/openarena",
        "/usr/lib/ioquake3",
        "/usr/share/games/quake3",
        "/usr/share/games/quake3-data",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        paths.push(home.join(".openarena"));
        paths.push(home.join(".q3a"));
    }
    paths
}

impl PakIndex {
    /// Every `*.pk3` in every game folder directly under each of
    /// `basepaths` (folders that do not exist are skipped). When two base
    /// paths hold a pak of the same name, the first one's is kept. A file
    /// that is not a readable zip is an error naming it.
    pub fn scan(basepaths: &[PathBuf]) -> Result<PakIndex, PakError> {
        let mut index = PakIndex::default();
        for base in basepaths {
            let Ok(games) = std::fs::read_dir(base) else {
                continue;
            };
            index.searched.push(base.clone());
            let mut games: Vec<PathBuf> = games
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            games.sort();
            for game in games {
                let Some(game_name) = game.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                let Ok(entries) = std::fs::read_dir(&game) else {
                    continue;
                };
                let mut pk3s: Vec<PathBuf> = entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| {
                        p.extension().is_some_and(|e| e.eq_ignore_ascii_case("pk3")) && p.is_file()
                    })
                    .collect();
                pk3s.sort();
                for path in pk3s {
                    let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
                        continue;
                    };
                    let name = format!("{game_name}/{stem}");
                    if index.paks.contains_key(&name) {
                        continue;
                    }
                    let pak = Pak::open(&path, &name)?;
                    index.paks.insert(name, pak);
                }
            }
        }
        Ok(index)
    }

    /// An index of the given paks (tests, or paks read elsewhere).
    pub fn from_paks(paks: impl IntoIterator<Item = Pak>) -> PakIndex {
        PakIndex {
            paks: paks.into_iter().map(|p| (p.name.clone(), p)).collect(),
            searched: Vec::new(),
        }
    }

    /// The pak named `name` (`game/basename`; exact case first, then any).
    pub fn get(&self, name: &str) -> Option<&Pak> {
        self.paks.get(name).or_else(|| {
            self.paks
                .values()
                .find(|p| p.name.eq_ignore_ascii_case(name))
        })
    }

    /// A pak whose plain checksum is `checksum` (how clients match the
    /// server's lists: names are for messages).
    pub fn by_checksum(&self, checksum: i32) -> Option<&Pak> {
        self.paks.values().find(|p| p.checksum == checksum)
    }

    /// Every pak, by name.
    pub fn paks(&self) -> impl Iterator<Item = &Pak> {
        self.paks.values()
    }

    /// How many paks it holds.
    pub fn len(&self) -> usize {
        self.paks.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.paks.is_empty()
    }

    /// The base paths that existed when scanned.
    pub fn searched(&self) -> &[PathBuf] {
        &self.searched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Write};
    use zip::write::SimpleFileOptions;

    /// A small pak: two files, an empty one (left out of the checksum) and
    /// a directory entry, stored uncompressed.
    fn small_pak() -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let stored = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .last_modified_time(zip::DateTime::default());
        zip.add_directory("vm/", stored).unwrap();
        zip.start_file("vm/cgame.qvm", stored).unwrap();
        zip.write_all(b"not really a qvm").unwrap();
        zip.start_file("empty.cfg", stored).unwrap();
        zip.start_file("maps/tiny.bsp", stored).unwrap();
        zip.write_all(&[7u8; 300]).unwrap();
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn md4_is_the_rfc_1320_digest() {
        // RFC 1320's test vector for "abc": a448017aaf21d8525fc10ae87aa6729d.
        let digest = Md4::digest(b"abc");
        assert_eq!(
            digest.as_slice(),
            [
                0xa4, 0x48, 0x01, 0x7a, 0xaf, 0x21, 0xd8, 0x52, 0x5f, 0xc1, 0x0a, 0xe8, 0x7a, 0xa6,
                0x72, 0x9d
            ]
        );
        // The block checksum XORs the digest's little-endian words: for no
        // words at all, MD4("") = 31d6cfe0d16ae931b73c59d7e0c089c0.
        let empty = 0xe0cf_d631u32 ^ 0x31e9_6ad1 ^ 0xd759_3cb7 ^ 0xc089_c0e0;
        assert_eq!(block_checksum([]), empty as i32);
    }

    #[test]
    fn a_small_pak_has_the_checksums_ioquake3_gives_it() {
        let bytes = small_pak();
        let pak = Pak::from_reader(Cursor::new(&bytes), Path::new("zz.pk3"), "baseoa/zz").unwrap();
        // The CRC-32s of the two non-empty files, in directory order.
        let crcs = [
            crc32fast::hash(b"not really a qvm"),
            crc32fast::hash(&[7u8; 300]),
        ];
        assert_eq!(pak.crcs, crcs);
        assert_eq!(pak.checksum(), block_checksum(crcs));
        assert_eq!(
            pak.pure_checksum(12345),
            block_checksum([12345, crcs[0], crcs[1]])
        );
        // Pinned: what ioquake3 reports for this very file (put in a game
        // folder of a pure ioq3ded, its sv_paks and, with checksum feed
        // 12345, its pure checksum).
        assert_eq!(pak.checksum(), PINNED_CHECKSUM);
        assert_eq!(pak.pure_checksum(12345), PINNED_PURE_CHECKSUM);
        assert!(pak.contains("VM/CGAME.QVM"));
        assert!(pak.contains("maps/tiny.bsp"));
        assert!(!pak.contains("vm/ui.qvm"));
        assert_eq!(pak.name(), "baseoa/zz");
    }

    /// ioquake3's own figure: this pak (the same entries, written by
    /// Python's zipfile) put in `baseoa/` of a pure `ioq3ded` 1.36 appears
    /// in its `sv_paks` as 1418141393.
    const PINNED_CHECKSUM: i32 = 1_418_141_393;
    /// The same with checksum feed 12345 in front (ioquake3 picks its feed
    /// at random, so this one is pinned from our own computation; the live
    /// tests check pure checksums against real servers).
    const PINNED_PURE_CHECKSUM: i32 = -1_313_656_559;

    #[test]
    fn an_index_finds_paks_in_game_folders_and_names_bad_ones() {
        let base = std::env::temp_dir().join(format!("netq3-pak-{}", std::process::id()));
        let game = base.join("baseoa");
        std::fs::create_dir_all(&game).unwrap();
        std::fs::write(game.join("zz.pk3"), small_pak()).unwrap();
        std::fs::write(game.join("notes.txt"), b"not a pak").unwrap();
        let index = PakIndex::scan(&[base.clone(), base.join("missing")]).unwrap();
        assert_eq!(index.len(), 1);
        assert_eq!(index.get("baseoa/ZZ").unwrap().checksum(), PINNED_CHECKSUM);
        assert_eq!(index.searched(), std::slice::from_ref(&base));
        std::fs::write(game.join("broken.pk3"), b"PK\x03\x04 truncated").unwrap();
        let error = PakIndex::scan(std::slice::from_ref(&base))
            .unwrap_err()
            .to_string();
        assert!(error.contains("broken.pk3"), "{error}");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
