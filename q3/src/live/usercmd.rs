//! Usercmds and their keyed delta coding (`MSG_WriteDeltaUsercmdKey`).
//!
//! Each usercmd is coded against the previous one in the packet (the first
//! against an all-zero one): the server time as an 8-bit increment when it
//! grew by less than 256, else in full; then one bit saying whether anything
//! else changed, and if so each field as "unchanged" or its new value XORed
//! with the key. The key is `checksumFeed ^ messageAcknowledge ^
//! hash(last acknowledged server command)`, XORed once more with the
//! command's server time, so a client that gets any of these wrong sends
//! garbage moves.

use fields::{BitSink, BitSource};

use super::error::LiveError;

/// One frame of player input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usercmd {
    /// The server time the command was made for (ms).
    pub server_time: i32,
    /// View angles as 16-bit fractions of a turn (pitch, yaw, roll).
    pub angles: [u16; 3],
    /// Buttons held (`BUTTON_*` bits).
    pub buttons: u16,
    /// Weapon selected.
    pub weapon: u8,
    /// Forward (+) / back (-) speed.
    pub forward: i8,
    /// Right (+) / left (-) speed.
    pub right: i8,
    /// Up (+, jump) / down (-, crouch) speed.
    pub up: i8,
}

/// Quake 3's `MSG_HashKey` over at most `max_len` bytes of `text` (`%` and
/// bytes with the high bit count as `.`, as after a message round trip).
pub fn hash_key(text: &[u8], max_len: usize) -> i32 {
    let mut hash: i32 = 0;
    for (i, &byte) in text.iter().take(max_len).enumerate() {
        if byte == 0 {
            break;
        }
        let c = if byte & 0x80 != 0 || byte == b'%' {
            b'.'
        } else {
            byte
        };
        hash = hash.wrapping_add(i32::from(c).wrapping_mul(119 + i as i32));
    }
    hash ^ (hash >> 10) ^ (hash >> 20)
}

fn write_keyed<S: BitSink + ?Sized>(
    sink: &mut S,
    key: i32,
    old: u32,
    new: u32,
    bits: u32,
) -> Result<(), LiveError> {
    if old == new {
        sink.put_bits(0, 1)?;
    } else {
        sink.put_bits(1, 1)?;
        sink.put_bits(new ^ key as u32, bits)?;
    }
    Ok(())
}

fn read_keyed<S: BitSource + ?Sized>(
    source: &mut S,
    key: i32,
    old: u32,
    bits: u32,
) -> Result<u32, LiveError> {
    if source.get_bits(1)? == 0 {
        return Ok(old);
    }
    let mask = if bits == 32 {
        u32::MAX
    } else {
        (1 << bits) - 1
    };
    Ok(source.get_bits(bits)? ^ (key as u32 & mask))
}

impl Usercmd {
    fn same_input(&self, other: &Usercmd) -> bool {
        Usercmd {
            server_time: 0,
            ..*self
        } == Usercmd {
            server_time: 0,
            ..*other
        }
    }

    /// Writes `self` as a delta from `from` under `key`.
    pub fn write_delta<S: BitSink + ?Sized>(
        &self,
        sink: &mut S,
        key: i32,
        from: &Usercmd,
    ) -> Result<(), LiveError> {
        let step = self.server_time.wrapping_sub(from.server_time);
        if step < 0 {
            // Quake 3 compares signed: a step back would take the short form
            // and arrive wrong, so it is refused; callers keep time monotonic.
            return Err(LiveError::Usage("usercmd server time went backwards"));
        } else if step < 256 {
            sink.put_bits(1, 1)?;
            sink.put_bits(step as u32, 8)?;
        } else {
            sink.put_bits(0, 1)?;
            sink.put_bits(self.server_time as u32, 32)?;
        }
        if self.same_input(from) {
            sink.put_bits(0, 1)?;
            return Ok(());
        }
        let key = key ^ self.server_time;
        sink.put_bits(1, 1)?;
        for axis in 0..3 {
            write_keyed(
                sink,
                key,
                from.angles[axis].into(),
                self.angles[axis].into(),
                16,
            )?;
        }
        write_keyed(
            sink,
            key,
            from.forward as u8 as u32,
            self.forward as u8 as u32,
            8,
        )?;
        write_keyed(
            sink,
            key,
            from.right as u8 as u32,
            self.right as u8 as u32,
            8,
        )?;
        write_keyed(sink, key, from.up as u8 as u32, self.up as u8 as u32, 8)?;
        write_keyed(sink, key, from.buttons.into(), self.buttons.into(), 16)?;
        write_keyed(sink, key, from.weapon.into(), self.weapon.into(), 8)?;
        Ok(())
    }

    /// Reads a usercmd written by [`Usercmd::write_delta`], as the server does.
    pub fn read_delta<S: BitSource + ?Sized>(
        source: &mut S,
        key: i32,
        from: &Usercmd,
    ) -> Result<Usercmd, LiveError> {
        let server_time = if source.get_bits(1)? != 0 {
            from.server_time.wrapping_add(source.get_bits(8)? as i32)
        } else {
            source.get_bits(32)? as i32
        };
        if source.get_bits(1)? == 0 {
            return Ok(Usercmd {
                server_time,
                ..*from
            });
        }
        let key = key ^ server_time;
        let mut angles = [0u16; 3];
        for (axis, angle) in angles.iter_mut().enumerate() {
            *angle = read_keyed(source, key, from.angles[axis].into(), 16)? as u16;
        }
        // The server turns -128 into -127 so speeds stay symmetric.
        let speed = |v: u32| (v as u8 as i8).max(-127);
        let forward = speed(read_keyed(source, key, from.forward as u8 as u32, 8)?);
        let right = speed(read_keyed(source, key, from.right as u8 as u32, 8)?);
        let up = speed(read_keyed(source, key, from.up as u8 as u32, 8)?);
        let buttons = read_keyed(source, key, from.buttons.into(), 16)? as u16;
        let weapon = read_keyed(source, key, from.weapon.into(), 8)? as u8;
        Ok(Usercmd {
            server_time,
            angles,
            buttons,
            weapon,
            forward,
            right,
            up,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fields::{BitReader, BitWriter, HuffmanCode, HuffmanReader, HuffmanWriter};
    use proptest::prelude::*;

    #[test]
    fn hash_key_matches_hand_computation() {
        // 'a' * 119 + 'b' * 120 = 97 * 119 + 98 * 120 = 23303.
        let h = 23303;
        assert_eq!(hash_key(b"ab", 32), h ^ (h >> 10) ^ (h >> 20));
        assert_eq!(hash_key(b"ab\0zz", 32), hash_key(b"ab", 32));
        assert_eq!(hash_key(b"a%", 32), hash_key(b"a.", 32));
        assert_eq!(hash_key(b"abc", 2), hash_key(b"ab", 32));
        assert_eq!(hash_key(b"", 32), 0);
    }

    #[test]
    fn idle_commands_take_ten_bits_each() {
        let code = HuffmanCode::quake3();
        let mut buf = [0u8; 64];
        let mut writer = BitWriter::new(&mut buf);
        let mut sink = HuffmanWriter::new(&mut writer, code);
        let a = Usercmd {
            server_time: 1000,
            ..Usercmd::default()
        };
        let b = Usercmd {
            server_time: 1050,
            ..a
        };
        let start = sink.bits_written();
        b.write_delta(&mut sink, 99, &a).unwrap();
        let bits = sink.bits_written() - start;
        // 1 flag + coded byte 50 + 1 "no change" bit.
        assert_eq!(bits, 2 + code.code_word(50).len as usize);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn keyed_deltas_round_trip_and_wrong_keys_garble(
            times in proptest::collection::vec(0i32..400, 1..5),
            yaw in any::<u16>(), forward in -127i8..=127, key in any::<i32>(),
        ) {
            let code = HuffmanCode::quake3();
            let mut cmds = Vec::new();
            let mut t = 5000;
            for (i, step) in times.iter().enumerate() {
                t += step;
                cmds.push(Usercmd { server_time: t, angles: [0, yaw.wrapping_add(i as u16), 0], forward, ..Usercmd::default() });
            }
            let mut buf = [0u8; 512];
            let mut writer = BitWriter::new(&mut buf);
            let mut sink = HuffmanWriter::new(&mut writer, code);
            let mut from = Usercmd::default();
            for cmd in &cmds {
                cmd.write_delta(&mut sink, key, &from).unwrap();
                from = *cmd;
            }
            let bits = sink.bits_written();
            let mut source = HuffmanReader::new(BitReader::with_bit_len(&buf, bits), code);
            let mut from = Usercmd::default();
            for cmd in &cmds {
                let got = Usercmd::read_delta(&mut source, key, &from).unwrap();
                prop_assert_eq!(got, *cmd);
                from = got;
            }
            if yaw != 0 {
                let mut source = HuffmanReader::new(BitReader::with_bit_len(&buf, bits), code);
                let got = Usercmd::read_delta(&mut source, key ^ 0x5a5a, &Usercmd::default()).unwrap();
                prop_assert_ne!(got.angles[1], cmds[0].angles[1]);
            }
        }
    }
}
