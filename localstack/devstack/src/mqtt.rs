//! A small MQTT broker playing AWS IoT Core's part locally.
//!
//! MQTT 3.1.1 (protocol level 4) and MQTT 5 (level 5) over plain TCP, one task per
//! connection. Modelled on AWS IoT Core's behaviour rather than a general broker:
//!
//! - QoS 0 and 1 only: a QoS 2 PUBLISH (or any QoS 2 flow packet) closes the connection, and
//!   subscriptions are granted at most QoS 1.
//! - Packets are capped at 128 KiB (the whole packet, fixed header included); a bigger one
//!   closes the connection as soon as its length is read.
//! - Each client's [`Permissions`] come from the [`Authorizer`] at CONNECT. A PUBLISH
//!   outside them closes the connection and is not forwarded; a SUBSCRIBE to a filter they do
//!   not cover gets the failure return code.
//! - A second connection with the same client id disconnects the first.
//! - Keep-alive: no packet for 1.5 x the client's keep-alive closes the connection
//!   (keep-alive 0 turns this off).
//!
//! Deliberately not implemented (not needed locally): retained messages (the retain flag is
//! ignored, nothing is stored), will messages (parsed and dropped), persistent sessions (every
//! connection starts clean whatever the clean-session / clean-start flag says, session
//! present is always 0), redelivery of unacknowledged QoS 1 messages, MQTT 5 enhanced
//! authentication, topic aliases, shared subscriptions and subscription identifiers (the
//! CONNACK says so), and forwarding MQTT 5 PUBLISH properties to subscribers (they are
//! parsed and skipped). Username and password are read and ignored: the authorizer decides
//! by client id alone.
//!
//! MQTT 5 clients get v5-shaped packets: CONNACK / SUBACK / UNSUBACK with properties and v5
//! reason codes, and a DISCONNECT carrying the reason before the broker closes on an error.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::{timeout, Instant};
use tracing::{debug, info, warn};

use crate::iot_rules::{topic_matches, valid_topic_filter, valid_topic_name};

/// AWS IoT Core's message size limit.
const MAX_PACKET: usize = 128 * 1024;
/// AWS IoT Core's client id limit.
const MAX_CLIENT_ID: usize = 128;
/// How long a fresh TCP connection may take to send CONNECT.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A subscriber that does not read for this long is dropped rather than stalling its task.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Messages queued for one subscriber; beyond that new ones are dropped for it (with a
/// warning) so one stuck subscriber cannot make the broker's memory grow without bound.
const OUTBOX_CAPACITY: usize = 1024;

const CONNECT: u8 = 1;
const CONNACK: u8 = 2;
const PUBLISH: u8 = 3;
const PUBACK: u8 = 4;
const PUBREC: u8 = 5;
const PUBREL: u8 = 6;
const PUBCOMP: u8 = 7;
const SUBSCRIBE: u8 = 8;
const SUBACK: u8 = 9;
const UNSUBSCRIBE: u8 = 10;
const UNSUBACK: u8 = 11;
const PINGREQ: u8 = 12;
const PINGRESP: u8 = 13;
const DISCONNECT: u8 = 14;
const AUTH: u8 = 15;

/// MQTT topic filters a client may publish to / subscribe to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    pub publish: Vec<String>,
    pub subscribe: Vec<String>,
}

impl Permissions {
    fn may_publish(&self, topic: &str) -> bool {
        self.publish
            .iter()
            .any(|filter| topic_matches(filter, topic))
    }

    /// A subscription is allowed when every topic it could match is matched by one allowed
    /// filter, so a client cannot widen its reach with wildcards.
    fn may_subscribe(&self, filter: &str) -> bool {
        self.subscribe
            .iter()
            .any(|allowed| filter_covers(allowed, filter))
    }
}

/// Whether every topic matching `requested` also matches `allowed` (both valid filters).
fn filter_covers(allowed: &str, requested: &str) -> bool {
    if !valid_topic_filter(allowed) || !valid_topic_filter(requested) {
        return false;
    }
    // A leading wildcard in `allowed` never matches `$` topics, which `requested` may name.
    if requested.starts_with('$') && (allowed.starts_with('+') || allowed.starts_with('#')) {
        return false;
    }
    let mut allowed_levels = allowed.split('/');
    let mut requested_levels = requested.split('/');
    loop {
        match (allowed_levels.next(), requested_levels.next()) {
            (Some("#"), _) => return true,
            (Some(_), Some("#")) => return false,
            (Some("+"), Some(_)) => {}
            (Some(a), Some(r)) if a == r => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

/// Decides who may connect, and what they may do.
pub trait Authorizer: Send + Sync + 'static {
    /// On CONNECT: Some(permissions) to accept, None to refuse (CONNACK 0x05 not authorized
    /// in 3.1.1; 0x87 in v5), then close.
    fn connect<'a>(&'a self, client_id: &'a str) -> BoxFuture<'a, Option<Permissions>>;
}

/// An authorised PUBLISH, as handed to the rule engine.
#[derive(Clone, Debug)]
pub struct Published {
    pub client_id: String,
    pub topic: String,
    pub payload: Bytes,
    pub received_at_millis: i64,
}

/// The broker: bind, then [`Broker::serve`].
pub struct Broker {
    listener: TcpListener,
    local_addr: SocketAddr,
}

impl Broker {
    pub async fn bind(addr: SocketAddr) -> std::io::Result<Broker> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        Ok(Broker {
            listener,
            local_addr,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves until the future is dropped (which also ends every connection). Every
    /// authorised PUBLISH is sent to `published` (the rule engine) and delivered to matching
    /// subscribers. A PUBLISH to a topic outside the client's permissions closes the
    /// connection (AWS IoT does this) and is not forwarded.
    pub async fn serve(
        self,
        authorizer: Arc<dyn Authorizer>,
        published: mpsc::UnboundedSender<Published>,
    ) {
        info!(addr = %self.local_addr, "MQTT broker listening");
        let hub = Arc::new(Hub::default());
        // Owning the connection tasks here is what makes dropping `serve` stop them too.
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        // MQTT packets are small and latency matters more than throughput.
                        if let Err(error) = stream.set_nodelay(true) {
                            debug!(%peer, %error, "could not set TCP_NODELAY");
                        }
                        connections.spawn(connection(
                            stream,
                            peer,
                            hub.clone(),
                            authorizer.clone(),
                            published.clone(),
                        ));
                    }
                    Err(error) => {
                        // E.g. out of file descriptors: back off instead of spinning.
                        warn!(%error, "MQTT accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(joined) = connections.join_next(), if !connections.is_empty() => {
                    if let Err(error) = joined {
                        warn!(%error, "MQTT connection task failed");
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Shared state: who is connected and what they subscribed to.

#[derive(Default)]
struct Hub {
    clients: Mutex<HashMap<String, Client>>,
    next_conn_id: AtomicU64,
}

struct Client {
    /// Tells registrations of the same client id apart across reconnects.
    conn_id: u64,
    outbox: mpsc::Sender<Delivery>,
    /// Fired when a newer connection takes this client id over.
    kick: oneshot::Sender<()>,
    subscriptions: HashMap<String, SubOptions>,
}

#[derive(Clone, Copy, Debug)]
struct SubOptions {
    qos: u8,
    /// MQTT 5's No Local: do not send the client its own messages.
    no_local: bool,
}

#[derive(Debug)]
struct Delivery {
    topic: Arc<str>,
    payload: Bytes,
    qos: u8,
}

impl Hub {
    fn clients(&self) -> MutexGuard<'_, HashMap<String, Client>> {
        // No code panics while holding the lock, but a poisoned map is still usable.
        self.clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers a connection, disconnecting any earlier one with the same client id.
    fn register(
        &self,
        client_id: &str,
        outbox: mpsc::Sender<Delivery>,
        kick: oneshot::Sender<()>,
    ) -> u64 {
        let conn_id = self.next_conn_id.fetch_add(1, Ordering::Relaxed);
        let client = Client {
            conn_id,
            outbox,
            kick,
            subscriptions: HashMap::new(),
        };
        if let Some(previous) = self.clients().insert(client_id.to_owned(), client) {
            info!(
                client_id,
                "MQTT client id reconnected: disconnecting the earlier connection"
            );
            // The earlier connection may already be gone; nothing to do then.
            let _ = previous.kick.send(());
        }
        conn_id
    }

    fn unregister(&self, client_id: &str, conn_id: u64) {
        let mut clients = self.clients();
        if clients.get(client_id).is_some_and(|c| c.conn_id == conn_id) {
            clients.remove(client_id);
        }
    }

    fn with_client<T>(
        &self,
        client_id: &str,
        conn_id: u64,
        f: impl FnOnce(&mut Client) -> T,
    ) -> Option<T> {
        self.clients()
            .get_mut(client_id)
            .filter(|c| c.conn_id == conn_id)
            .map(f)
    }

    /// Queues a message for every subscriber whose filters match, once per subscriber at the
    /// highest QoS granted among its matching subscriptions (capped by the PUBLISH's QoS).
    fn route(&self, from_conn: u64, topic: &str, payload: &Bytes, qos: u8) {
        let topic: Arc<str> = topic.into();
        for (client_id, client) in self.clients().iter() {
            let granted = client
                .subscriptions
                .iter()
                .filter(|(_, opts)| !(opts.no_local && client.conn_id == from_conn))
                .filter(|(filter, _)| topic_matches(filter, &topic))
                .map(|(_, opts)| opts.qos)
                .max();
            let Some(granted) = granted else { continue };
            let delivery = Delivery {
                topic: topic.clone(),
                payload: payload.clone(),
                qos: granted.min(qos),
            };
            match client.outbox.try_send(delivery) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    warn!(client_id, %topic, "MQTT subscriber is not keeping up: message dropped")
                }
                // Connection ending; it unregisters itself.
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Errors

/// Why a connection was closed by the broker.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    #[error("write timed out")]
    WriteTimeout,
    #[error("malformed packet: {0}")]
    Malformed(&'static str),
    #[error("protocol violation: {0}")]
    Protocol(&'static str),
    #[error("unsupported protocol {name:?} level {level}")]
    UnsupportedProtocol { name: String, level: u8 },
    #[error("packet of {0} bytes is over the {max}-byte limit", max = MAX_PACKET)]
    TooLarge(usize),
    #[error("QoS 2 is not supported")]
    Qos2,
    #[error("publish to {0:?} is outside the client's permissions")]
    Forbidden(String),
    #[error("publish to invalid topic name {0:?}")]
    InvalidTopic(String),
    #[error("keep-alive timeout")]
    KeepAlive,
    #[error("client id taken over by a newer connection")]
    TakenOver,
}

impl Error {
    /// The MQTT 5 DISCONNECT reason code to tell the client, where one applies.
    fn v5_reason(&self) -> Option<u8> {
        Some(match self {
            Error::Io(_) | Error::WriteTimeout | Error::UnsupportedProtocol { .. } => return None,
            Error::Malformed(_) => 0x81,
            Error::Protocol(_) => 0x82,
            Error::TooLarge(_) => 0x95,
            Error::Qos2 => 0x9B,
            Error::Forbidden(_) => 0x87,
            Error::InvalidTopic(_) => 0x90,
            Error::KeepAlive => 0x8D,
            Error::TakenOver => 0x8E,
        })
    }
}

// ---------------------------------------------------------------------------------------
// Wire format: framing, reading fields, encoding.

/// Decodes a Variable Byte Integer: Ok(None) while more bytes are needed, an error past the
/// four bytes MQTT allows.
fn decode_varint(bytes: &[u8]) -> Result<Option<(usize, usize)>, Error> {
    let mut value = 0usize;
    for (i, byte) in bytes.iter().take(4).enumerate() {
        value |= usize::from(byte & 0x7F) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(Some((value, i + 1)));
        }
    }
    if bytes.len() >= 4 {
        Err(Error::Malformed("remaining length longer than 4 bytes"))
    } else {
        Ok(None)
    }
}

fn put_varint(out: &mut BytesMut, mut value: usize) {
    loop {
        let mut byte = (value & 0x7F) as u8;
        value >>= 7;
        if value > 0 {
            byte |= 0x80;
        }
        out.put_u8(byte);
        if value == 0 {
            break;
        }
    }
}

/// Splits one whole packet (first byte, body) off the front of `buf`, if it holds one.
/// Refuses an oversized packet as soon as its length is known, before buffering it.
fn take_frame(buf: &mut BytesMut) -> Result<Option<(u8, Bytes)>, Error> {
    if buf.is_empty() {
        return Ok(None);
    }
    let Some((remaining, len_bytes)) = decode_varint(&buf[1..])? else {
        return Ok(None);
    };
    let total = 1 + len_bytes + remaining;
    if total > MAX_PACKET {
        return Err(Error::TooLarge(total));
    }
    if buf.len() < total {
        buf.reserve(total - buf.len());
        return Ok(None);
    }
    let mut frame = buf.split_to(total).freeze();
    let header = frame.get_u8();
    frame.advance(len_bytes);
    Ok(Some((header, frame)))
}

/// Reads fields off a packet body; running short is a malformed packet, never a panic.
struct Reader(Bytes);

impl Reader {
    fn need(&self, n: usize) -> Result<(), Error> {
        if self.0.len() < n {
            Err(Error::Malformed("packet shorter than its fields"))
        } else {
            Ok(())
        }
    }

    fn u8(&mut self) -> Result<u8, Error> {
        self.need(1)?;
        Ok(self.0.get_u8())
    }

    fn u16(&mut self) -> Result<u16, Error> {
        self.need(2)?;
        Ok(self.0.get_u16())
    }

    fn u32(&mut self) -> Result<u32, Error> {
        self.need(4)?;
        Ok(self.0.get_u32())
    }

    fn take(&mut self, n: usize) -> Result<Bytes, Error> {
        self.need(n)?;
        Ok(self.0.split_to(n))
    }

    fn binary(&mut self) -> Result<Bytes, Error> {
        let n = usize::from(self.u16()?);
        self.take(n)
    }

    fn string(&mut self) -> Result<String, Error> {
        let text = String::from_utf8(self.binary()?.to_vec())
            .map_err(|_| Error::Malformed("string is not UTF-8"))?;
        if text.contains('\0') {
            return Err(Error::Malformed("string contains U+0000"));
        }
        Ok(text)
    }

    fn varint(&mut self) -> Result<usize, Error> {
        let (value, len) =
            decode_varint(&self.0)?.ok_or(Error::Malformed("truncated variable byte integer"))?;
        self.0.advance(len);
        Ok(value)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn rest(self) -> Bytes {
        self.0
    }
}

/// The MQTT 5 properties this broker acts on; the others are checked and skipped.
#[derive(Debug, Default)]
struct Properties {
    maximum_packet_size: Option<u32>,
    topic_alias: Option<u16>,
    authentication_method: bool,
}

fn read_properties(r: &mut Reader) -> Result<Properties, Error> {
    let len = r.varint()?;
    let mut p = Reader(r.take(len)?);
    let mut props = Properties::default();
    while !p.is_empty() {
        match p.varint()? {
            // Byte-valued.
            0x01 | 0x17 | 0x19 | 0x24 | 0x25 | 0x28 | 0x29 | 0x2A => {
                p.u8()?;
            }
            // Two-byte integers.
            0x13 | 0x21 | 0x22 => {
                p.u16()?;
            }
            0x23 => props.topic_alias = Some(p.u16()?),
            // Four-byte integers.
            0x02 | 0x11 | 0x18 => {
                p.u32()?;
            }
            0x27 => match p.u32()? {
                0 => return Err(Error::Protocol("maximum packet size of 0")),
                n => props.maximum_packet_size = Some(n),
            },
            0x0B => {
                p.varint()?;
            }
            // Strings.
            0x03 | 0x08 | 0x12 | 0x1A | 0x1C | 0x1F => {
                p.string()?;
            }
            0x15 => {
                p.string()?;
                props.authentication_method = true;
            }
            // Binary data.
            0x09 | 0x16 => {
                p.binary()?;
            }
            // User property: a string pair.
            0x26 => {
                p.string()?;
                p.string()?;
            }
            _ => return Err(Error::Malformed("unknown property")),
        }
    }
    Ok(props)
}

fn encode(first_byte: u8, body: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(body.len() + 5);
    out.put_u8(first_byte);
    put_varint(&mut out, body.len());
    out.put_slice(body);
    out.freeze()
}

fn put_string(out: &mut BytesMut, s: &str) {
    // Topics and filters were checked against u16::MAX when they were read.
    out.put_u16(s.len() as u16);
    out.put_slice(s.as_bytes());
}

fn encode_connack(v5: bool, code: u8) -> Bytes {
    let mut body = BytesMut::new();
    body.put_u8(0); // session present: never, sessions are not kept
    body.put_u8(code);
    if v5 {
        let mut props = BytesMut::new();
        if code == 0 {
            // Tell v5 clients what they may not use, so compliant ones do not try.
            props.put_slice(&[0x24, 1]); // Maximum QoS 1
            props.put_u8(0x27); // Maximum Packet Size
            props.put_u32(MAX_PACKET as u32);
            props.put_slice(&[0x29, 0]); // no subscription identifiers
            props.put_slice(&[0x2A, 0]); // no shared subscriptions
        }
        put_varint(&mut body, props.len());
        body.put_slice(&props);
    }
    encode(CONNACK << 4, &body)
}

fn encode_publish(v5: bool, topic: &str, payload: &[u8], qos: u8, packet_id: u16) -> Bytes {
    let mut body = BytesMut::with_capacity(topic.len() + payload.len() + 5);
    put_string(&mut body, topic);
    if qos > 0 {
        body.put_u16(packet_id);
    }
    if v5 {
        body.put_u8(0); // no properties
    }
    body.put_slice(payload);
    encode((PUBLISH << 4) | (qos << 1), &body)
}

fn encode_ack(packet_type: u8, v5: bool, packet_id: u16, codes: &[u8]) -> Bytes {
    let mut body = BytesMut::with_capacity(codes.len() + 3);
    body.put_u16(packet_id);
    if v5 {
        body.put_u8(0); // no properties
    }
    body.put_slice(codes);
    encode(packet_type << 4, &body)
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

// ---------------------------------------------------------------------------------------
// CONNECT

#[derive(Debug)]
struct Connect {
    v5: bool,
    client_id: String,
    keep_alive: u16,
    maximum_packet_size: Option<u32>,
    authentication_method: bool,
}

fn parse_connect(flags: u8, body: Bytes) -> Result<Connect, Error> {
    if flags != 0 {
        return Err(Error::Malformed("CONNECT flags must be 0"));
    }
    let mut r = Reader(body);
    let name = r.string()?;
    let level = r.u8()?;
    if name != "MQTT" || !(level == 4 || level == 5) {
        return Err(Error::UnsupportedProtocol { name, level });
    }
    let v5 = level == 5;
    let connect_flags = r.u8()?;
    if connect_flags & 0x01 != 0 {
        return Err(Error::Malformed("reserved CONNECT flag set"));
    }
    let will = connect_flags & 0x04 != 0;
    let will_qos = (connect_flags >> 3) & 0x03;
    if will_qos == 3 || (!will && (will_qos != 0 || connect_flags & 0x20 != 0)) {
        return Err(Error::Malformed("inconsistent will flags"));
    }
    let keep_alive = r.u16()?;
    let props = if v5 {
        read_properties(&mut r)?
    } else {
        Properties::default()
    };
    let client_id = r.string()?;
    // The will, username and password are read only to check the packet is well formed.
    if will {
        if v5 {
            read_properties(&mut r)?;
        }
        r.string()?;
        r.binary()?;
    }
    if connect_flags & 0x80 != 0 {
        r.string()?;
    }
    if connect_flags & 0x40 != 0 {
        r.binary()?;
    }
    if !r.is_empty() {
        return Err(Error::Malformed("trailing bytes after CONNECT payload"));
    }
    Ok(Connect {
        v5,
        client_id,
        keep_alive,
        maximum_packet_size: props.maximum_packet_size,
        authentication_method: props.authentication_method,
    })
}

/// Reads one packet; Ok(None) when the peer closed first.
async fn read_frame(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
) -> Result<Option<(u8, Bytes)>, Error> {
    loop {
        if let Some(frame) = take_frame(buf)? {
            return Ok(Some(frame));
        }
        if stream.read_buf(buf).await? == 0 {
            return Ok(None);
        }
    }
}

async fn write_with_timeout(stream: &mut TcpStream, packet: &[u8]) -> Result<(), Error> {
    timeout(WRITE_TIMEOUT, stream.write_all(packet))
        .await
        .map_err(|_| Error::WriteTimeout)??;
    Ok(())
}

/// Refuses a connection with a CONNACK return/reason code, then closes it.
async fn refuse(mut stream: TcpStream, v5: bool, code: u8) {
    let connack = encode_connack(v5, code);
    if write_with_timeout(&mut stream, &connack).await.is_ok() {
        let _ = stream.shutdown().await;
    }
}

/// One TCP connection, from CONNECT to close.
async fn connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    hub: Arc<Hub>,
    authorizer: Arc<dyn Authorizer>,
    published: mpsc::UnboundedSender<Published>,
) {
    let mut buf = BytesMut::with_capacity(1024);
    let (first_byte, body) = match timeout(CONNECT_TIMEOUT, read_frame(&mut stream, &mut buf)).await
    {
        Ok(Ok(Some(frame))) => frame,
        Ok(Ok(None)) => {
            debug!(%peer, "MQTT connection closed before CONNECT");
            return;
        }
        Ok(Err(error)) => {
            info!(%peer, %error, "MQTT connection closed before CONNECT");
            return;
        }
        Err(_) => {
            info!(%peer, "MQTT connection sent no CONNECT in time: closed");
            return;
        }
    };
    if first_byte >> 4 != CONNECT {
        info!(%peer, "MQTT connection's first packet was not CONNECT: closed");
        return;
    }
    let connect = match parse_connect(first_byte & 0x0F, body) {
        Ok(connect) => connect,
        Err(error @ Error::UnsupportedProtocol { .. }) => {
            info!(%peer, %error, "MQTT connection refused");
            // Return code 1, unacceptable protocol version, in the 3.1.1 shape every client reads.
            return refuse(stream, false, 0x01).await;
        }
        Err(error) => {
            info!(%peer, %error, "MQTT CONNECT rejected: closed");
            return;
        }
    };
    let v5 = connect.v5;
    let client_id = connect.client_id.clone();
    if client_id.is_empty() || client_id.len() > MAX_CLIENT_ID {
        info!(%peer, client_id, "MQTT connection refused: client identifier rejected");
        return refuse(stream, v5, if v5 { 0x85 } else { 0x02 }).await;
    }
    if connect.authentication_method {
        info!(%peer, client_id, "MQTT connection refused: enhanced authentication unsupported");
        return refuse(stream, v5, 0x8C).await;
    }
    let Some(permissions) = authorizer.connect(&client_id).await else {
        info!(%peer, client_id, "MQTT connection refused: not authorized");
        return refuse(stream, v5, if v5 { 0x87 } else { 0x05 }).await;
    };

    let (outbox_tx, outbox_rx) = mpsc::channel(OUTBOX_CAPACITY);
    let (kick_tx, kick_rx) = oneshot::channel();
    let conn_id = hub.register(&client_id, outbox_tx, kick_tx);
    let mut conn = Conn {
        stream,
        buf,
        v5,
        client_id,
        conn_id,
        permissions,
        client_max_packet: connect
            .maximum_packet_size
            .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)),
        next_packet_id: 0,
        hub: hub.clone(),
        published,
    };
    let result = match write_with_timeout(&mut conn.stream, &encode_connack(v5, 0)).await {
        Ok(()) => {
            info!(%peer, client_id = conn.client_id, v5, keep_alive = connect.keep_alive, "MQTT client connected");
            conn.run(connect.keep_alive, outbox_rx, kick_rx).await
        }
        Err(error) => Err(error),
    };
    hub.unregister(&conn.client_id, conn.conn_id);
    match result {
        Ok(how) => info!(%peer, client_id = conn.client_id, "MQTT client disconnected: {how}"),
        Err(error) => {
            info!(%peer, client_id = conn.client_id, %error, "MQTT client disconnected by the broker");
            if let (true, Some(reason)) = (v5, error.v5_reason()) {
                // Best effort: the client learns why before the socket closes.
                let _ = timeout(
                    Duration::from_secs(1),
                    conn.stream
                        .write_all(&encode(DISCONNECT << 4, &[reason, 0])),
                )
                .await;
            }
        }
    }
    let _ = timeout(Duration::from_secs(1), conn.stream.shutdown()).await;
}

// ---------------------------------------------------------------------------------------
// An accepted connection

struct Conn {
    stream: TcpStream,
    buf: BytesMut,
    v5: bool,
    client_id: String,
    conn_id: u64,
    permissions: Permissions,
    /// MQTT 5 clients may cap what they receive; larger deliveries are dropped for them.
    client_max_packet: usize,
    next_packet_id: u16,
    hub: Arc<Hub>,
    published: mpsc::UnboundedSender<Published>,
}

enum Flow {
    Continue,
    /// The client sent DISCONNECT.
    Stop,
}

impl Conn {
    /// Serves packets until the client leaves (Ok, with how) or the broker closes it (Err).
    async fn run(
        &mut self,
        keep_alive: u16,
        mut outbox: mpsc::Receiver<Delivery>,
        mut kicked: oneshot::Receiver<()>,
    ) -> Result<&'static str, Error> {
        // MQTT: the server may close after 1.5 x keep-alive without a packet; 0 disables it.
        let grace = (keep_alive > 0).then(|| Duration::from_millis(u64::from(keep_alive) * 1500));
        let mut last_packet = Instant::now();
        loop {
            // Handle whatever whole packets are already buffered before waiting again.
            while let Some((first_byte, body)) = take_frame(&mut self.buf)? {
                last_packet = Instant::now();
                if let Flow::Stop = self.handle(first_byte, body).await? {
                    return Ok("sent DISCONNECT");
                }
            }
            let deadline = grace.map(|grace| last_packet + grace);
            // Every branch here is cancellation safe: `read_buf` only appends to `self.buf`.
            tokio::select! {
                biased;
                _ = &mut kicked => return Err(Error::TakenOver),
                Some(delivery) = outbox.recv() => self.deliver(delivery).await?,
                read = self.stream.read_buf(&mut self.buf) => {
                    if read? == 0 {
                        return Ok("closed the connection");
                    }
                }
                () = sleep_until(deadline) => return Err(Error::KeepAlive),
            }
        }
    }

    async fn write(&mut self, packet: &[u8]) -> Result<(), Error> {
        write_with_timeout(&mut self.stream, packet).await
    }

    async fn handle(&mut self, first_byte: u8, body: Bytes) -> Result<Flow, Error> {
        let flags = first_byte & 0x0F;
        let packet_type = first_byte >> 4;
        // Fixed header flags are fixed for everything but PUBLISH (MQTT 2.2.2).
        let expected_flags = match packet_type {
            PUBLISH => flags,
            SUBSCRIBE | UNSUBSCRIBE | PUBREL => 0x02,
            _ => 0,
        };
        if flags != expected_flags {
            return Err(Error::Malformed("invalid fixed header flags"));
        }
        match packet_type {
            PUBLISH => self.on_publish(flags, body).await?,
            // Deliveries are not redelivered, so acknowledgements need no bookkeeping.
            PUBACK => {}
            PUBREC | PUBREL | PUBCOMP => return Err(Error::Qos2),
            SUBSCRIBE => self.on_subscribe(body).await?,
            UNSUBSCRIBE => self.on_unsubscribe(body).await?,
            PINGREQ => self.write(&encode(PINGRESP << 4, &[])).await?,
            DISCONNECT => return Ok(Flow::Stop),
            CONNECT => return Err(Error::Protocol("second CONNECT")),
            AUTH if self.v5 => return Err(Error::Protocol("AUTH is not supported")),
            _ => return Err(Error::Protocol("packet type a client may not send")),
        }
        Ok(Flow::Continue)
    }

    async fn on_publish(&mut self, flags: u8, body: Bytes) -> Result<(), Error> {
        let qos = (flags >> 1) & 0x03;
        match qos {
            3 => return Err(Error::Malformed("PUBLISH QoS 3")),
            2 => return Err(Error::Qos2),
            _ => {}
        }
        let mut r = Reader(body);
        let topic = r.string()?;
        let packet_id = if qos > 0 {
            match r.u16()? {
                0 => return Err(Error::Malformed("packet identifier 0")),
                id => id,
            }
        } else {
            0
        };
        if self.v5 && read_properties(&mut r)?.topic_alias.is_some() {
            // Topic Alias Maximum was left at its default, 0.
            return Err(Error::Protocol("topic aliases are not supported"));
        }
        if !valid_topic_name(&topic) {
            return Err(Error::InvalidTopic(topic));
        }
        if !self.permissions.may_publish(&topic) {
            return Err(Error::Forbidden(topic));
        }
        let payload = r.rest();
        debug!(
            client_id = self.client_id,
            topic,
            qos,
            bytes = payload.len(),
            "MQTT PUBLISH"
        );
        self.hub.route(self.conn_id, &topic, &payload, qos);
        let message = Published {
            client_id: self.client_id.clone(),
            topic,
            payload,
            received_at_millis: now_millis(),
        };
        if self.published.send(message).is_err() {
            debug!("MQTT rule engine channel closed: message not forwarded");
        }
        if qos == 1 {
            self.write(&encode_ack(PUBACK, false, packet_id, &[]))
                .await?;
        }
        Ok(())
    }

    async fn on_subscribe(&mut self, body: Bytes) -> Result<(), Error> {
        let mut r = Reader(body);
        let packet_id = r.u16()?;
        if self.v5 {
            read_properties(&mut r)?;
        }
        let mut codes = Vec::new();
        while !r.is_empty() {
            let filter = r.string()?;
            let options = r.u8()?;
            let reserved = if self.v5 { 0xC0 } else { 0xFC };
            let requested = options & 0x03;
            if options & reserved != 0 || requested == 3 {
                return Err(Error::Malformed("invalid subscription options"));
            }
            let code = if !valid_topic_filter(&filter) {
                if self.v5 {
                    0x8F
                } else {
                    0x80
                }
            } else if self.v5 && filter.starts_with("$share/") {
                0x9E
            } else if !self.permissions.may_subscribe(&filter) {
                if self.v5 {
                    0x87
                } else {
                    0x80
                }
            } else {
                let opts = SubOptions {
                    qos: requested.min(1),
                    no_local: self.v5 && options & 0x04 != 0,
                };
                self.hub
                    .with_client(&self.client_id, self.conn_id, |client| {
                        client.subscriptions.insert(filter.clone(), opts)
                    });
                opts.qos
            };
            debug!(client_id = self.client_id, filter, code, "MQTT SUBSCRIBE");
            codes.push(code);
        }
        if codes.is_empty() {
            return Err(Error::Protocol("SUBSCRIBE without topic filters"));
        }
        self.write(&encode_ack(SUBACK, self.v5, packet_id, &codes))
            .await
    }

    async fn on_unsubscribe(&mut self, body: Bytes) -> Result<(), Error> {
        let mut r = Reader(body);
        let packet_id = r.u16()?;
        if self.v5 {
            read_properties(&mut r)?;
        }
        let mut codes = Vec::new();
        while !r.is_empty() {
            let filter = r.string()?;
            let removed = self
                .hub
                .with_client(&self.client_id, self.conn_id, |client| {
                    client.subscriptions.remove(&filter).is_some()
                })
                .unwrap_or(false);
            debug!(
                client_id = self.client_id,
                filter, removed, "MQTT UNSUBSCRIBE"
            );
            codes.push(if removed { 0x00 } else { 0x11 });
        }
        if codes.is_empty() {
            return Err(Error::Protocol("UNSUBSCRIBE without topic filters"));
        }
        // 3.1.1's UNSUBACK carries no reason codes.
        let codes = if self.v5 { &codes[..] } else { &[] };
        self.write(&encode_ack(UNSUBACK, self.v5, packet_id, codes))
            .await
    }

    async fn deliver(&mut self, delivery: Delivery) -> Result<(), Error> {
        let packet_id = if delivery.qos > 0 {
            // Non-zero and wrapping; with no redelivery there is nothing to collide with.
            self.next_packet_id = self.next_packet_id.checked_add(1).unwrap_or(1);
            self.next_packet_id
        } else {
            0
        };
        let packet = encode_publish(
            self.v5,
            &delivery.topic,
            &delivery.payload,
            delivery.qos,
            packet_id,
        );
        if packet.len() > self.client_max_packet {
            debug!(client_id = self.client_id, topic = %delivery.topic, "MQTT delivery over the client's maximum packet size: dropped");
            return Ok(());
        }
        debug!(client_id = self.client_id, topic = %delivery.topic, qos = delivery.qos, "MQTT deliver");
        self.write(&packet).await
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc::error::TryRecvError;
    use tokio::task::JoinHandle;

    const WAIT: Duration = Duration::from_secs(5);

    /// Accepts the client ids it knows, with their permissions.
    struct TestAuth(HashMap<String, Permissions>);

    impl Authorizer for TestAuth {
        fn connect<'a>(&'a self, client_id: &'a str) -> BoxFuture<'a, Option<Permissions>> {
            Box::pin(async move { self.0.get(client_id).cloned() })
        }
    }

    fn perms(publish: &[&str], subscribe: &[&str]) -> Permissions {
        Permissions {
            publish: publish.iter().map(|s| s.to_string()).collect(),
            subscribe: subscribe.iter().map(|s| s.to_string()).collect(),
        }
    }

    struct TestBroker {
        addr: SocketAddr,
        published: mpsc::UnboundedReceiver<Published>,
        task: JoinHandle<()>,
    }

    impl Drop for TestBroker {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    async fn start() -> TestBroker {
        let auth = TestAuth(HashMap::from([
            (
                "vase-1".to_string(),
                perms(&["vases/vase-1/#"], &["vases/vase-1/#"]),
            ),
            (
                "vase-2".to_string(),
                perms(&["vases/vase-2/#"], &["vases/vase-2/#"]),
            ),
            (
                "backend".to_string(),
                perms(&["vases/+/commands"], &["vases/+/heartbeat", "all/#"]),
            ),
        ]));
        let broker = Broker::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = broker.local_addr();
        let (tx, published) = mpsc::unbounded_channel();
        let task = tokio::spawn(broker.serve(Arc::new(auth), tx));
        TestBroker {
            addr,
            published,
            task,
        }
    }

    // --- A tiny hand-written client ---

    fn string(s: &str) -> Vec<u8> {
        let mut out = (s.len() as u16).to_be_bytes().to_vec();
        out.extend_from_slice(s.as_bytes());
        out
    }

    fn packet(first_byte: u8, body: &[u8]) -> Vec<u8> {
        encode(first_byte, body).to_vec()
    }

    fn connect_packet(client_id: &str, keep_alive: u16, level: u8, props: &[u8]) -> Vec<u8> {
        let mut body = string("MQTT");
        body.push(level);
        body.push(0x02); // clean session
        body.extend_from_slice(&keep_alive.to_be_bytes());
        if level == 5 {
            body.push(props.len() as u8);
            body.extend_from_slice(props);
        }
        body.extend(string(client_id));
        packet(0x10, &body)
    }

    fn publish_packet(v5: bool, topic: &str, payload: &[u8], qos: u8, packet_id: u16) -> Vec<u8> {
        let mut body = string(topic);
        if qos > 0 {
            body.extend_from_slice(&packet_id.to_be_bytes());
        }
        if v5 {
            body.extend_from_slice(&[2, 0x01, 1]); // payload format indicator: UTF-8
        }
        body.extend_from_slice(payload);
        packet(0x30 | (qos << 1), &body)
    }

    fn subscribe_packet(v5: bool, packet_id: u16, filters: &[(&str, u8)]) -> Vec<u8> {
        let mut body = packet_id.to_be_bytes().to_vec();
        if v5 {
            body.push(0);
        }
        for (filter, qos) in filters {
            body.extend(string(filter));
            body.push(*qos);
        }
        packet(0x82, &body)
    }

    /// Reads one packet: (first byte, body).
    async fn read_packet(s: &mut TcpStream) -> (u8, Vec<u8>) {
        timeout(WAIT, async {
            let first = s.read_u8().await.expect("a packet");
            let mut len = 0usize;
            for i in 0..4 {
                let b = s.read_u8().await.expect("remaining length");
                len |= usize::from(b & 0x7F) << (7 * i);
                if b & 0x80 == 0 {
                    break;
                }
            }
            let mut body = vec![0; len];
            s.read_exact(&mut body).await.expect("packet body");
            (first, body)
        })
        .await
        .expect("a packet in time")
    }

    /// Asserts the broker closes the connection (EOF or reset) without sending anything
    /// else first, except an MQTT 5 DISCONNECT, whose reason code is returned.
    async fn expect_closed(s: &mut TcpStream) -> Option<u8> {
        let mut buf = Vec::new();
        let _ = timeout(WAIT, s.read_to_end(&mut buf))
            .await
            .expect("connection closed in time");
        match buf.as_slice() {
            [] => None,
            [0xE0, 2, reason, 0] => Some(*reason),
            other => panic!("unexpected bytes before close: {other:02x?}"),
        }
    }

    async fn connected(addr: SocketAddr, client_id: &str, level: u8) -> TcpStream {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(&connect_packet(client_id, 60, level, &[]))
            .await
            .unwrap();
        let (first, body) = read_packet(&mut s).await;
        assert_eq!(first, 0x20);
        assert_eq!(&body[..2], &[0, 0], "CONNACK accepted");
        s
    }

    async fn subscribed(s: &mut TcpStream, v5: bool, filters: &[(&str, u8)]) -> Vec<u8> {
        s.write_all(&subscribe_packet(v5, 7, filters))
            .await
            .unwrap();
        let (first, body) = read_packet(s).await;
        assert_eq!(first, 0x90);
        assert_eq!(&body[..2], &[0, 7]);
        body[if v5 { 3 } else { 2 }..].to_vec()
    }

    // --- Tests ---

    #[tokio::test]
    async fn accepted_publish_qos1_is_acked_and_forwarded() {
        let mut broker = start().await;
        let mut s = connected(broker.addr, "vase-1", 4).await;
        s.write_all(&publish_packet(
            false,
            "vases/vase-1/heartbeat",
            b"{\"a\":1}",
            1,
            42,
        ))
        .await
        .unwrap();
        assert_eq!(read_packet(&mut s).await, (0x40, vec![0, 42]));
        let message = timeout(WAIT, broker.published.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(message.client_id, "vase-1");
        assert_eq!(message.topic, "vases/vase-1/heartbeat");
        assert_eq!(&message.payload[..], b"{\"a\":1}");
        assert!(message.received_at_millis > 1_700_000_000_000);

        // QoS 0 needs no ack and is forwarded too; PINGREQ is answered.
        s.write_all(&publish_packet(false, "vases/vase-1/x", b"0", 0, 0))
            .await
            .unwrap();
        s.write_all(&[0xC0, 0]).await.unwrap();
        assert_eq!(read_packet(&mut s).await, (0xD0, vec![]));
        let message = timeout(WAIT, broker.published.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(message.topic, "vases/vase-1/x");

        // A clean DISCONNECT closes without complaint.
        s.write_all(&[0xE0, 0]).await.unwrap();
        assert_eq!(expect_closed(&mut s).await, None);
    }

    #[tokio::test]
    async fn unknown_client_is_refused_with_connack_5() {
        let mut broker = start().await;
        let mut s = TcpStream::connect(broker.addr).await.unwrap();
        s.write_all(&connect_packet("stranger", 60, 4, &[]))
            .await
            .unwrap();
        assert_eq!(read_packet(&mut s).await, (0x20, vec![0, 5]));
        assert_eq!(expect_closed(&mut s).await, None);
        assert_eq!(
            broker.published.try_recv().unwrap_err(),
            TryRecvError::Empty
        );
    }

    #[tokio::test]
    async fn empty_client_id_is_rejected_with_connack_2() {
        let broker = start().await;
        let mut s = TcpStream::connect(broker.addr).await.unwrap();
        s.write_all(&connect_packet("", 60, 4, &[])).await.unwrap();
        assert_eq!(read_packet(&mut s).await, (0x20, vec![0, 2]));
        assert_eq!(expect_closed(&mut s).await, None);
    }

    #[tokio::test]
    async fn unsupported_protocol_level_gets_connack_1() {
        let broker = start().await;
        let mut s = TcpStream::connect(broker.addr).await.unwrap();
        s.write_all(&connect_packet("vase-1", 60, 3, &[]))
            .await
            .unwrap();
        assert_eq!(read_packet(&mut s).await, (0x20, vec![0, 1]));
        assert_eq!(expect_closed(&mut s).await, None);
    }

    #[tokio::test]
    async fn publish_to_forbidden_topic_closes_and_is_not_forwarded() {
        let mut broker = start().await;
        let mut s = connected(broker.addr, "vase-1", 4).await;
        s.write_all(&publish_packet(
            false,
            "vases/vase-2/heartbeat",
            b"{}",
            1,
            1,
        ))
        .await
        .unwrap();
        assert_eq!(expect_closed(&mut s).await, None);
        assert_eq!(
            broker.published.try_recv().unwrap_err(),
            TryRecvError::Empty
        );
    }

    #[tokio::test]
    async fn publish_with_wildcards_or_qos2_closes() {
        let mut broker = start().await;
        let mut s = connected(broker.addr, "vase-1", 4).await;
        s.write_all(&publish_packet(false, "vases/vase-1/+", b"{}", 0, 0))
            .await
            .unwrap();
        assert_eq!(expect_closed(&mut s).await, None);

        let mut s = connected(broker.addr, "vase-1", 4).await;
        s.write_all(&publish_packet(false, "vases/vase-1/x", b"{}", 2, 1))
            .await
            .unwrap();
        assert_eq!(expect_closed(&mut s).await, None);
        assert_eq!(
            broker.published.try_recv().unwrap_err(),
            TryRecvError::Empty
        );
    }

    #[tokio::test]
    async fn subscriber_receives_permitted_publish_from_another_client() {
        let broker = start().await;
        let mut backend = connected(broker.addr, "backend", 4).await;
        // Granted QoS is capped at 1; a filter wider than the permissions fails with 0x80.
        let granted = subscribed(
            &mut backend,
            false,
            &[
                ("vases/+/heartbeat", 2),
                ("vases/#", 0),
                ("vases/vase-1/heartbeat", 0),
            ],
        )
        .await;
        assert_eq!(granted, vec![1, 0x80, 0]);

        let mut vase = connected(broker.addr, "vase-1", 4).await;
        vase.write_all(&publish_packet(
            false,
            "vases/vase-1/heartbeat",
            b"beat",
            1,
            9,
        ))
        .await
        .unwrap();
        assert_eq!(read_packet(&mut vase).await, (0x40, vec![0, 9]));

        // One delivery, at the highest QoS of the matching subscriptions.
        let (first, body) = read_packet(&mut backend).await;
        assert_eq!(first, 0x32, "PUBLISH QoS 1");
        let mut expected = string("vases/vase-1/heartbeat");
        expected.extend_from_slice(&[0, 1]); // packet id
        expected.extend_from_slice(b"beat");
        assert_eq!(body, expected);
        backend.write_all(&[0x40, 2, 0, 1]).await.unwrap(); // PUBACK

        // The other way round: commands reach the vase, QoS 0 publishes stay QoS 0.
        assert_eq!(
            subscribed(&mut vase, false, &[("vases/vase-1/commands", 1)]).await,
            vec![1]
        );
        backend
            .write_all(&publish_packet(
                false,
                "vases/vase-1/commands",
                b"water",
                0,
                0,
            ))
            .await
            .unwrap();
        let (first, body) = read_packet(&mut vase).await;
        assert_eq!(first, 0x30);
        let mut expected = string("vases/vase-1/commands");
        expected.extend_from_slice(b"water");
        assert_eq!(body, expected);

        // After UNSUBSCRIBE nothing more arrives (a PINGRESP comes back first instead).
        let mut body = vec![0, 8];
        body.extend(string("vases/vase-1/commands"));
        vase.write_all(&packet(0xA2, &body)).await.unwrap();
        assert_eq!(read_packet(&mut vase).await, (0xB0, vec![0, 8]));
        backend
            .write_all(&publish_packet(
                false,
                "vases/vase-1/commands",
                b"more",
                0,
                0,
            ))
            .await
            .unwrap();
        backend.write_all(&[0xC0, 0]).await.unwrap();
        assert_eq!(read_packet(&mut backend).await, (0xD0, vec![]));
        vase.write_all(&[0xC0, 0]).await.unwrap();
        assert_eq!(read_packet(&mut vase).await, (0xD0, vec![]));
    }

    #[tokio::test]
    async fn duplicate_client_id_disconnects_the_first() {
        let mut broker = start().await;
        let mut first = connected(broker.addr, "vase-1", 4).await;
        let mut second = connected(broker.addr, "vase-1", 4).await;
        assert_eq!(expect_closed(&mut first).await, None);
        second
            .write_all(&publish_packet(
                false,
                "vases/vase-1/heartbeat",
                b"{}",
                1,
                3,
            ))
            .await
            .unwrap();
        assert_eq!(read_packet(&mut second).await, (0x40, vec![0, 3]));
        assert!(timeout(WAIT, broker.published.recv())
            .await
            .unwrap()
            .is_some());
    }

    #[tokio::test]
    async fn oversized_packet_closes() {
        let mut broker = start().await;
        let mut s = connected(broker.addr, "vase-1", 4).await;
        // Announce a PUBLISH one byte over the limit; the broker refuses it on the header.
        let mut header = BytesMut::new();
        header.put_u8(0x30);
        put_varint(&mut header, MAX_PACKET - 3);
        s.write_all(&header).await.unwrap();
        assert_eq!(expect_closed(&mut s).await, None);

        // Just under the limit is fine.
        let mut s = connected(broker.addr, "vase-1", 4).await;
        let topic = "vases/vase-1/big";
        let payload = vec![b'x'; MAX_PACKET - 4 - 2 - topic.len()];
        let publish = publish_packet(false, topic, &payload, 0, 0);
        assert_eq!(publish.len(), MAX_PACKET);
        s.write_all(&publish).await.unwrap();
        let message = timeout(WAIT, broker.published.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(message.payload.len(), payload.len());
    }

    #[tokio::test]
    async fn malformed_remaining_length_closes() {
        let broker = start().await;
        let mut s = connected(broker.addr, "vase-1", 4).await;
        s.write_all(&[0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
            .await
            .unwrap();
        assert_eq!(expect_closed(&mut s).await, None);

        // Before CONNECT too.
        let mut s = TcpStream::connect(broker.addr).await.unwrap();
        s.write_all(&[0x10, 0x80, 0x80, 0x80, 0x80]).await.unwrap();
        assert_eq!(expect_closed(&mut s).await, None);
    }

    #[tokio::test]
    async fn truncated_fields_close() {
        let broker = start().await;
        let mut s = connected(broker.addr, "vase-1", 4).await;
        // A PUBLISH whose topic length points past the end of the packet.
        s.write_all(&[0x30, 3, 0, 9, b'a']).await.unwrap();
        assert_eq!(expect_closed(&mut s).await, None);
    }

    #[tokio::test]
    async fn keep_alive_timeout_closes() {
        let broker = start().await;
        let mut s = TcpStream::connect(broker.addr).await.unwrap();
        s.write_all(&connect_packet("vase-1", 1, 4, &[]))
            .await
            .unwrap();
        assert_eq!(read_packet(&mut s).await, (0x20, vec![0, 0]));
        let started = Instant::now();
        assert_eq!(expect_closed(&mut s).await, None);
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(1400), "{waited:?}");
        assert!(waited < Duration::from_millis(3000), "{waited:?}");
    }

    #[tokio::test]
    async fn v5_connect_publish_subscribe() {
        let mut broker = start().await;
        // Session expiry interval and a user property, to be parsed and skipped.
        let mut props = vec![0x11, 0, 0, 0, 10, 0x26];
        props.extend(string("k"));
        props.extend(string("v"));
        let mut vase = TcpStream::connect(broker.addr).await.unwrap();
        vase.write_all(&connect_packet("vase-1", 60, 5, &props))
            .await
            .unwrap();
        let (first, body) = read_packet(&mut vase).await;
        assert_eq!(first, 0x20);
        assert_eq!(&body[..2], &[0, 0], "v5 CONNACK: success");
        assert_eq!(
            usize::from(body[2]),
            body.len() - 3,
            "v5 CONNACK carries properties"
        );
        assert!(
            body[3..].windows(2).any(|w| w == [0x24, 1]),
            "Maximum QoS 1"
        );

        let mut backend = connected(broker.addr, "backend", 5).await;
        // v5 SUBACK reason codes: granted QoS, or 0x87 not authorized.
        assert_eq!(
            subscribed(
                &mut backend,
                true,
                &[("vases/+/heartbeat", 1), ("secret/#", 1)]
            )
            .await,
            vec![1, 0x87]
        );

        vase.write_all(&publish_packet(true, "vases/vase-1/heartbeat", b"{}", 1, 5))
            .await
            .unwrap();
        assert_eq!(read_packet(&mut vase).await, (0x40, vec![0, 5]));
        let message = timeout(WAIT, broker.published.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (message.client_id.as_str(), message.topic.as_str()),
            ("vase-1", "vases/vase-1/heartbeat")
        );

        // Delivered v5-shaped: an empty property block before the payload.
        let (first, body) = read_packet(&mut backend).await;
        assert_eq!(first, 0x32);
        let mut expected = string("vases/vase-1/heartbeat");
        expected.extend_from_slice(&[0, 1, 0]);
        expected.extend_from_slice(b"{}");
        assert_eq!(body, expected);

        // A forbidden publish gets a DISCONNECT with 0x87 (not authorized), then the close.
        vase.write_all(&publish_packet(true, "vases/vase-2/heartbeat", b"{}", 0, 0))
            .await
            .unwrap();
        assert_eq!(expect_closed(&mut vase).await, Some(0x87));
        assert_eq!(
            broker.published.try_recv().unwrap_err(),
            TryRecvError::Empty
        );

        // v5 refusal codes: 0x87 not authorized, 0x85 client identifier not valid.
        for (client_id, code) in [("stranger", 0x87), ("", 0x85)] {
            let mut s = TcpStream::connect(broker.addr).await.unwrap();
            s.write_all(&connect_packet(client_id, 60, 5, &[]))
                .await
                .unwrap();
            assert_eq!(read_packet(&mut s).await, (0x20, vec![0, code, 0]));
            assert_eq!(expect_closed(&mut s).await, None);
        }
    }

    #[tokio::test]
    async fn v5_takeover_says_why() {
        let broker = start().await;
        let mut first = connected(broker.addr, "vase-2", 5).await;
        let _second = connected(broker.addr, "vase-2", 5).await;
        assert_eq!(expect_closed(&mut first).await, Some(0x8E));
    }

    #[test]
    fn varint_decoding() {
        assert_eq!(decode_varint(&[0x00]).unwrap(), Some((0, 1)));
        assert_eq!(decode_varint(&[0x7F]).unwrap(), Some((127, 1)));
        assert_eq!(decode_varint(&[0x80, 0x01]).unwrap(), Some((128, 2)));
        assert_eq!(
            decode_varint(&[0xFF, 0xFF, 0xFF, 0x7F]).unwrap(),
            Some((268_435_455, 4))
        );
        assert_eq!(decode_varint(&[0x80, 0x80]).unwrap(), None);
        assert!(decode_varint(&[0x80, 0x80, 0x80, 0x80]).is_err());
        for n in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            2_097_151,
            2_097_152,
            268_435_455,
        ] {
            let mut out = BytesMut::new();
            put_varint(&mut out, n);
            assert_eq!(decode_varint(&out).unwrap(), Some((n, out.len())));
        }
    }

    #[test]
    fn subscription_permission_coverage() {
        for (allowed, requested, expected) in [
            ("a/#", "a/b", true),
            ("a/#", "a", true),
            ("a/#", "a/+/c", true),
            ("a/#", "a/#", true),
            ("#", "x/#", true),
            ("#", "$aws/x", false),
            ("a/+", "a/b", true),
            ("a/+", "a/+", true),
            ("a/+", "a/#", false),
            ("a/+", "a/b/c", false),
            ("a/b", "a/+", false),
            ("a/b", "a/b", true),
            ("a/+/c", "a/b/c", true),
            ("a/b/#", "a/+/#", false),
        ] {
            assert_eq!(
                filter_covers(allowed, requested),
                expected,
                "{allowed:?} covers {requested:?}"
            );
        }
    }
}
