//! # netchan
//!
//! A sans-IO network channel for game traffic over UDP.
#![forbid(unsafe_code)]

pub mod compress;
pub mod conditioner;
pub mod connection;
pub mod crypto;
pub mod driver;
pub mod endpoint;
pub mod error;
pub mod fragment;
pub mod handshake;
pub mod local;
pub mod metrics;
pub mod notify;
pub mod packet;
pub mod pool;
pub mod rate;
pub mod reliable;
pub mod sequence;
pub mod state;
pub mod udp;

pub use compress::{Compressor, HuffmanCompressor};
pub use conditioner::{BurstLoss, ConditionerConfig, LinkConditioner};
pub use connection::{
    codes, Connection, ConnectionConfig, ConnectionId, DisconnectReason, Event, Phase, Role,
    MAX_EVENT, MAX_QUICKEST_ITEM,
};
pub use crypto::PresharedKey;
pub use driver::{Driver, Transport};
pub use endpoint::{
    random_secret, ConnectOptions, Endpoint, EndpointConfig, ServerConfig, Transmit,
};
pub use error::{ConnectError, DecodeError, FragmentError, SendError};
pub use handshake::RejectReason;
pub use local::{LocalDriver, LocalHub};
pub use metrics::{EndpointMetrics, Metrics};
pub use packet::MAX_DATAGRAM;
pub use rate::RateAnnounce;
pub use state::StateId;
pub use udp::{UdpDriver, UdpTransport};
