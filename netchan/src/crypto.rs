//! Optional authenticated encryption with a pre-shared key (ChaCha20-Poly1305).
//!
//! Every connection gets its own session key, derived from the pre-shared
//! key and a 12-byte session nonce that the server makes unique per
//! connection and sends in its accept. Each datagram's AEAD nonce is the
//! direction plus the full 64-bit sequence number: the sequence never
//! repeats within a session, so neither does the nonce. The 13-byte data
//! header is authenticated as associated data, so a tampered sequence or ack
//! fails; a replayed datagram repeats a sequence the receive window has seen
//! and is rejected before decryption.

use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{ChaCha20Poly1305, Key, KeyInit, Nonce, Tag};

use crate::error::DecodeError;

/// Size of the authentication tag appended to encrypted datagrams.
pub const TAG_LEN: usize = 16;

/// A 256-bit pre-shared key.
#[derive(Clone, PartialEq, Eq)]
pub struct PresharedKey(pub [u8; 32]);

impl std::fmt::Debug for PresharedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.write_str("PresharedKey(..)")
    }
}

/// The two directions of a connection; each uses its own nonce space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server.
    ToServer = 0,
    /// Server to client.
    ToClient = 1,
}

/// Per-connection AEAD state.
#[derive(Clone)]
pub struct SessionCipher {
    cipher: ChaCha20Poly1305,
    send: Direction,
}

impl std::fmt::Debug for SessionCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCipher")
            .field("send", &self.send)
            .finish_non_exhaustive()
    }
}

fn nonce(direction: Direction, seq: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[0] = direction as u8;
    n[4..].copy_from_slice(&seq.to_le_bytes());
    Nonce::from(n)
}

impl SessionCipher {
    /// Derives the session key: the ChaCha20 keystream of the pre-shared key
    /// under the session nonce (a PRF output, unique per session), bound to
    /// the client id through the associated data.
    pub fn derive(
        psk: &PresharedKey,
        session_nonce: &[u8; 12],
        client_id: u32,
        send: Direction,
    ) -> Self {
        let master = ChaCha20Poly1305::new(Key::from_slice(&psk.0));
        let mut key = [0u8; 32];
        // Encrypting zeros yields the raw keystream; the tag is not needed.
        // Encryption of a 32-byte buffer cannot fail (the limit is ~256 GiB).
        let _ = master.encrypt_in_place_detached(
            Nonce::from_slice(session_nonce),
            &client_id.to_le_bytes(),
            &mut key,
        );
        Self {
            cipher: ChaCha20Poly1305::new(Key::from_slice(&key)),
            send,
        }
    }

    fn receive_direction(&self) -> Direction {
        match self.send {
            Direction::ToServer => Direction::ToClient,
            Direction::ToClient => Direction::ToServer,
        }
    }

    /// Encrypts `body` in place and returns the tag to append.
    pub fn seal(&self, seq: u64, header: &[u8], body: &mut [u8]) -> [u8; TAG_LEN] {
        match self
            .cipher
            .encrypt_in_place_detached(&nonce(self.send, seq), header, body)
        {
            Ok(tag) => tag.into(),
            // Only reachable for bodies beyond the AEAD's length limit, far
            // above a datagram; an all-zero tag then fails at the peer.
            Err(_) => [0; TAG_LEN],
        }
    }

    /// Authenticates and decrypts `body` in place.
    pub fn open(
        &self,
        seq: u64,
        header: &[u8],
        body: &mut [u8],
        tag: &[u8],
    ) -> Result<(), DecodeError> {
        if tag.len() != TAG_LEN {
            return Err(DecodeError::Authentication);
        }
        self.cipher
            .decrypt_in_place_detached(
                &nonce(self.receive_direction(), seq),
                header,
                body,
                Tag::from_slice(tag),
            )
            .map_err(|_| DecodeError::Authentication)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tamper() {
        let psk = PresharedKey([7; 32]);
        let client = SessionCipher::derive(&psk, &[1; 12], 42, Direction::ToServer);
        let server = SessionCipher::derive(&psk, &[1; 12], 42, Direction::ToClient);
        let header = [9u8; 13];
        let mut body = *b"hello world";
        let tag = client.seal(5, &header, &mut body);
        assert_ne!(&body, b"hello world");
        let mut copy = body;
        server.open(5, &header, &mut copy, &tag).unwrap();
        assert_eq!(&copy, b"hello world");
        // Wrong sequence (replay under another number), wrong header, wrong direction.
        let mut copy = body;
        assert!(server.open(6, &header, &mut copy, &tag).is_err());
        let mut copy = body;
        assert!(server.open(5, &[0; 13], &mut copy, &tag).is_err());
        let mut copy = body;
        assert!(client.open(5, &header, &mut copy, &tag).is_err());
        // Another session (other nonce or client id) cannot read it.
        let other = SessionCipher::derive(&psk, &[2; 12], 42, Direction::ToClient);
        let mut copy = body;
        assert!(other.open(5, &header, &mut copy, &tag).is_err());
    }
}
