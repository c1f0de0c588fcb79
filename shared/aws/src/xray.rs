//! Every AWS SDK operation as an X-Ray subsegment of the invocation that made it.
//!
//! With active tracing, Lambda records a segment per invocation and gives the function its
//! trace header (`_X_AMZN_TRACE_ID`, which `lambda_runtime` sets for each invocation). The SDK
//! only forwards that header, so a trace would show the function but not what it called. This
//! interceptor, on every client the functions build, times each operation (all its attempts),
//! sends it as a subsegment to the X-Ray daemon Lambda runs beside the function
//! (`AWS_XRAY_DAEMON_ADDRESS`, UDP, fire and forget) and passes the subsegment on as the parent
//! in the request's own trace header. Unsampled invocations, and processes with no daemon (tests,
//! the dev stack's in-process handlers), send nothing.
//!
//! `xray-lite` (0.0.x) does the same per call site, but sends subsegments for unsampled traces
//! too and needs the service and operation names spelt out at every call; the SDK already
//! stores both in each operation's configuration.

use std::net::{SocketAddr, UdpSocket};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextRef, BeforeTransmitInterceptorContextMut,
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};
use serde::Serialize;

/// The interceptor: `aws_sdk_x::config::Builder::from(&sdk).interceptor(XRaySubsegments)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct XRaySubsegments;

/// The parts of an X-Ray trace header (`Root=1-…;Parent=…;Sampled=1`) a subsegment needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceHeader {
    pub root: String,
    pub parent: String,
    pub sampled: bool,
}

impl TraceHeader {
    /// `None` without a root and a parent: nothing to attach a subsegment to.
    pub fn parse(header: &str) -> Option<Self> {
        let (mut root, mut parent, mut sampled) = (None, None, false);
        for field in header.split(';') {
            match field.trim().split_once('=') {
                Some(("Root", value)) => root = Some(value.to_owned()),
                Some(("Parent", value)) => parent = Some(value.to_owned()),
                Some(("Sampled", value)) => sampled = value == "1",
                _ => {}
            }
        }
        Some(Self {
            root: root.filter(|r| !r.is_empty())?,
            parent: parent.filter(|p| !p.is_empty())?,
            sampled,
        })
    }

    /// The header a downstream call carries: the same trace, with `parent` as its parent.
    pub fn with_parent(&self, parent: &str) -> String {
        format!(
            "Root={};Parent={parent};Sampled={}",
            self.root,
            u8::from(self.sampled)
        )
    }
}

/// One finished SDK operation, as the subsegment document the daemon takes.
#[derive(Debug, Serialize)]
pub struct Subsegment {
    pub name: String,
    pub id: String,
    pub trace_id: String,
    pub parent_id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub namespace: &'static str,
    pub start_time: f64,
    pub end_time: f64,
    pub aws: AwsCall,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpStatus>,
    /// A 4xx answer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
    /// A 429 answer (also an error).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub throttle: bool,
    /// A 5xx answer, or none at all (timeout, connection refused).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fault: bool,
}

#[derive(Debug, Serialize)]
pub struct AwsCall {
    pub operation: String,
    pub region: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub retries: u32,
}

#[derive(Debug, Serialize)]
pub struct HttpStatus {
    pub response: StatusOnly,
}

#[derive(Debug, Serialize)]
pub struct StatusOnly {
    pub status: u16,
}

/// What the call looked like when it ended.
#[derive(Debug)]
pub struct Ended {
    pub status: Option<u16>,
    pub request_id: Option<String>,
    pub attempts: u32,
    pub at: f64,
}

impl Subsegment {
    pub fn of(call: &Started, service: &str, operation: &str, region: &str, end: Ended) -> Self {
        let status = end.status;
        Self {
            name: service.to_owned(),
            id: call.id.clone(),
            trace_id: call.header.root.clone(),
            parent_id: call.header.parent.clone(),
            kind: "subsegment",
            namespace: "aws",
            start_time: call.at,
            end_time: end.at,
            aws: AwsCall {
                operation: operation.to_owned(),
                region: region.to_owned(),
                request_id: end.request_id,
                retries: end.attempts.saturating_sub(1),
            },
            http: status.map(|status| HttpStatus {
                response: StatusOnly { status },
            }),
            error: matches!(status, Some(400..=499)),
            throttle: status == Some(429),
            fault: !matches!(status, Some(100..=499)),
        }
    }

    /// The daemon's UDP datagram: its header line, then the document.
    pub fn datagram(&self) -> Vec<u8> {
        let mut bytes = br#"{"format": "json", "version": 1}"#.to_vec();
        bytes.push(b'\n');
        // A struct of strings and numbers always serialises.
        bytes.extend(serde_json::to_vec(self).unwrap_or_default());
        bytes
    }
}

/// An operation under way, kept in the operation's configuration from its start to its end.
#[derive(Debug, Clone)]
pub struct Started {
    pub header: TraceHeader,
    /// This subsegment's id: 16 hex digits.
    pub id: String,
    pub at: f64,
    pub attempts: u32,
}

impl Storable for Started {
    type Storer = StoreReplace<Self>;
}

/// The daemon, found once per container; `None` when this process has none.
struct Daemon {
    socket: UdpSocket,
    address: SocketAddr,
    region: String,
}

fn daemon() -> Option<&'static Daemon> {
    static DAEMON: OnceLock<Option<Daemon>> = OnceLock::new();
    DAEMON
        .get_or_init(|| {
            let address = std::env::var("AWS_XRAY_DAEMON_ADDRESS").ok()?;
            // Lambda gives `host:port`; the X-Ray SDKs also accept `tcp:… udp:host:port`.
            let udp = address
                .split_whitespace()
                .find_map(|part| part.strip_prefix("udp:"))
                .unwrap_or(&address);
            let address = udp.parse().ok()?;
            let socket = UdpSocket::bind(("0.0.0.0", 0)).ok()?;
            socket.set_nonblocking(true).ok()?;
            Some(Daemon {
                socket,
                address,
                region: std::env::var("AWS_REGION").unwrap_or_default(),
            })
        })
        .as_ref()
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

impl Intercept for XRaySubsegments {
    fn name(&self) -> &'static str {
        "XRaySubsegments"
    }

    fn read_before_execution(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if daemon().is_none() {
            return Ok(());
        }
        let header = std::env::var("_X_AMZN_TRACE_ID")
            .ok()
            .and_then(|h| TraceHeader::parse(&h))
            .filter(|h| h.sampled);
        if let Some(header) = header {
            cfg.interceptor_state().store_put(Started {
                header,
                id: format!("{:016x}", fastrand::u64(..)),
                at: now(),
                attempts: 0,
            });
        }
        Ok(())
    }

    fn read_before_attempt(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(mut started) = cfg.load::<Started>().cloned() {
            started.attempts += 1;
            cfg.interceptor_state().store_put(started);
        }
        Ok(())
    }

    fn modify_before_transmit(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // The SDK already sent the invocation's header; the callee's own segment (DynamoDB,
        // EventBridge, …) then hangs under this subsegment instead of beside it.
        if let Some(started) = cfg.load::<Started>() {
            let header = started.header.with_parent(&started.id);
            context
                .request_mut()
                .headers_mut()
                .insert("x-amzn-trace-id", header);
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let (Some(started), Some(daemon)) = (cfg.load::<Started>(), daemon()) else {
            return Ok(());
        };
        let (service, operation) = cfg
            .load::<Metadata>()
            .map_or(("AWS", "Unknown"), |m| (m.service(), m.name()));
        let response = context.response();
        let request_id = response.and_then(|r| {
            ["x-amzn-requestid", "x-amz-request-id"]
                .into_iter()
                .find_map(|name| r.headers().get(name))
                .map(str::to_owned)
        });
        let subsegment = Subsegment::of(
            started,
            service,
            operation,
            &daemon.region,
            Ended {
                status: response.map(|r| r.status().as_u16()),
                request_id,
                attempts: started.attempts,
                at: now(),
            },
        );
        // Fire and forget, as every X-Ray SDK does: a lost datagram costs a subsegment, never
        // the request.
        if let Err(error) = daemon
            .socket
            .send_to(&subsegment.datagram(), daemon.address)
        {
            tracing::debug!(%error, "the X-Ray daemon did not take a subsegment");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const LAMBDA_HEADER: &str =
        "Root=1-6750e2a1-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1;Lineage=a:0";

    #[test]
    fn the_invocation_header_gives_the_trace_and_the_parent() {
        let header = TraceHeader::parse(LAMBDA_HEADER).unwrap();
        assert_eq!(header.root, "1-6750e2a1-0123456789abcdef01234567");
        assert_eq!(header.parent, "53995c3f42cd8ad8");
        assert!(header.sampled);
        assert_eq!(
            header.with_parent("00000000000000ff"),
            "Root=1-6750e2a1-0123456789abcdef01234567;Parent=00000000000000ff;Sampled=1"
        );
        let unsampled = TraceHeader::parse("Root=1-a-b;Parent=c;Sampled=0").unwrap();
        assert!(!unsampled.sampled);
        // What the SDK sends outside Lambda, or a header with no segment to hang under.
        assert_eq!(TraceHeader::parse("Root=1-a-b;Sampled=1"), None);
        assert_eq!(TraceHeader::parse(""), None);
        assert_eq!(TraceHeader::parse("Root=;Parent=c"), None);
    }

    fn document(status: Option<u16>, attempts: u32) -> Value {
        let started = Started {
            header: TraceHeader::parse(LAMBDA_HEADER).unwrap(),
            id: "00000000000000ff".into(),
            at: 1_700_000_000.25,
            attempts,
        };
        let ended = Ended {
            status,
            request_id: status.map(|_| "REQ".to_owned()),
            attempts,
            at: 1_700_000_000.5,
        };
        let datagram =
            Subsegment::of(&started, "DynamoDB", "GetItem", "eu-west-1", ended).datagram();
        let text = String::from_utf8(datagram).unwrap();
        let (header, body) = text.split_once('\n').unwrap();
        assert_eq!(header, r#"{"format": "json", "version": 1}"#);
        serde_json::from_str(body).unwrap()
    }

    #[test]
    fn a_finished_call_is_a_subsegment_of_the_invocation() {
        assert_eq!(
            document(Some(200), 1),
            json!({
                "name": "DynamoDB",
                "id": "00000000000000ff",
                "trace_id": "1-6750e2a1-0123456789abcdef01234567",
                "parent_id": "53995c3f42cd8ad8",
                "type": "subsegment",
                "namespace": "aws",
                "start_time": 1_700_000_000.25,
                "end_time": 1_700_000_000.5,
                "aws": {"operation": "GetItem", "region": "eu-west-1", "request_id": "REQ", "retries": 0},
                "http": {"response": {"status": 200}},
            })
        );
    }

    #[test]
    fn how_a_call_ended_sets_error_throttle_and_fault() {
        let flags = |d: Value| {
            [
                d.get("error").is_some(),
                d.get("throttle").is_some(),
                d.get("fault").is_some(),
            ]
        };
        assert_eq!(flags(document(Some(200), 1)), [false, false, false]);
        assert_eq!(flags(document(Some(400), 1)), [true, false, false]);
        assert_eq!(flags(document(Some(429), 3)), [true, true, false]);
        assert_eq!(flags(document(Some(503), 3)), [false, false, true]);
        // No answer at all (a timeout, a refused connection): a fault without a status.
        let unanswered = document(None, 3);
        assert_eq!(flags(unanswered.clone()), [false, false, true]);
        assert_eq!(unanswered.get("http"), None);
        assert_eq!(unanswered["aws"]["retries"], 2);
    }
}
