//! A minimal HTTP/1.1 client over a real socket, for end-to-end tests of the local API.

use std::collections::HashMap;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Debug, Clone)]
pub struct HttpReply {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

impl HttpReply {
    pub fn code(&self) -> Option<&str> {
        self.body["code"].as_str()
    }
}

/// Sends one request (`Connection: close`) and reads the whole answer.
pub async fn send(
    address: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> HttpReply {
    let mut stream = TcpStream::connect(address)
        .await
        .expect("connect to the local API");
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\ncontent-length: {}\r\n", body.len());
    if !body.is_empty() {
        head.push_str("content-type: application/json\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(body.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let body = serde_json::from_str(body).unwrap_or(if body.is_empty() {
        Value::Null
    } else {
        Value::String(body.to_owned())
    });
    HttpReply {
        status,
        headers,
        body,
    }
}
