//! Shared by the codec fuzz targets: a struct with every field kind, and a
//! decode-then-reencode check.

use fields::{
    array, boolean, net_struct, q3_float, quantized, signed, unsigned, BitReader, BitWriter, Codec, EntityBody, Fields,
    NetFields,
};

net_struct! {
    /// Every field kind.
    pub struct Everything {
        pub time: i32 = signed(32),
        pub x: f32 = q3_float(),
        pub frame: u16 = unsigned(9),
        pub on: bool = boolean(),
        pub yaw: f32 = quantized(-180.0, 180.0, 10),
        pub stats: [i16; 16] = array(signed(16), 16),
        pub power: [u32; 3] = array(unsigned(32), 3),
    }
}

/// Decodes `data` as a struct delta and as an entity list. Whatever decodes
/// must re-encode and decode to the same words: the decoder accepted only
/// states the encoder can express.
pub fn run(codec: Codec, data: &[u8]) {
    let base = Everything { time: 1000, x: 16.0, frame: 3, stats: [7; 16], ..Everything::default() };
    let mut decoded = base;
    if codec.read_delta(&mut BitReader::new(data), &mut decoded).is_ok() {
        let mut buf = [0u8; 512];
        let mut writer = BitWriter::new(&mut buf);
        codec.write_delta(&mut writer, &base, &decoded).expect("a decoded state re-encodes");
        let bits = fields::BitSink::bits_written(&writer);
        let mut again = base;
        codec
            .read_delta(&mut BitReader::with_bit_len(&buf, bits), &mut again)
            .expect("a re-encoded state decodes");
        assert!(!again.wire_differs(&decoded));
    }

    let mut reader = BitReader::new(data);
    let mut last = None;
    while let Ok(Some(number)) = codec.read_entity_number(&mut reader, last, 1023) {
        assert!(number < 1023 && last.is_none_or(|last| number > last));
        let mut entity = base;
        match codec.read_entity_body(&mut reader, number, &mut entity) {
            Ok(EntityBody::Unchanged) | Ok(EntityBody::Removed) => assert_eq!(entity, base),
            Ok(EntityBody::Changed) => {}
            Err(_) => break,
        }
        last = Some(number);
    }
    let _ = Everything::TABLE;
}
