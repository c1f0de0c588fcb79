//! `devstack watch`: a command-line live-update subscriber. Connects to the WebSocket API
//! (with `?token=` when given), subscribes, and prints a line per frame until Ctrl-C; pings
//! every 5 minutes so the idle limit does not close it.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use crate::error::DevError;

fn line(frame: &Value) -> String {
    match frame["type"].as_str() {
        Some("event") => {
            let event = &frame["event"];
            format!(
                "{}  {:<36} {:<26} v{} {}",
                event["occurredAt"].as_str().unwrap_or("-"),
                frame["channel"].as_str().unwrap_or("-"),
                event["name"].as_str().unwrap_or("-"),
                event["aggregateVersion"],
                event["data"]
            )
        }
        _ => frame.to_string(),
    }
}

pub async fn watch(url: &str, token: Option<&str>, channels: &[String]) -> Result<(), DevError> {
    let url = match token {
        Some(token) => format!("{}/?token={token}", url.trim_end_matches('/')),
        None => url.to_owned(),
    };
    let (mut socket, _) = tokio_tungstenite::connect_async(&url)
        .await
        .map_err(|e| DevError::Unexpected(format!("connecting to {url}: {e}")))?;
    let subscribe = json!({ "action": "subscribe", "channels": channels });
    socket
        .send(Message::text(subscribe.to_string()))
        .await
        .map_err(|e| DevError::Unexpected(e.to_string()))?;
    let mut ping = tokio::time::interval(Duration::from_secs(300));
    ping.tick().await;
    loop {
        tokio::select! {
            frame = socket.next() => match frame {
                Some(Ok(Message::Text(text))) => {
                    let frame: Value = serde_json::from_str(&text).unwrap_or(Value::String(text.to_string()));
                    if frame["type"] != "pong" {
                        println!("{}", line(&frame));
                    }
                }
                Some(Ok(Message::Close(_))) | None => {
                    eprintln!("the server closed the connection");
                    return Ok(());
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(DevError::Unexpected(error.to_string())),
            },
            _ = ping.tick() => {
                socket
                    .send(Message::text(json!({ "action": "ping" }).to_string()))
                    .await
                    .map_err(|e| DevError::Unexpected(e.to_string()))?;
            }
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}
