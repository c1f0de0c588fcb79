use lambda_http::http::{header, HeaderValue, StatusCode};
use lambda_http::{Body, Response};
use serde::Serialize;
use serde_json::Value;

use bouquet_app::Replayable;
use bouquet_store::{IdempotencyRecord, StoreError};

use crate::problem::ApiError;

/// A successful answer: status, optional JSON body, extra headers; or the answer stored
/// under the request's idempotency key, which the pipeline replays (when the request is the
/// same) instead.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub body: Option<Value>,
    pub headers: Vec<(&'static str, String)>,
    pub replay: Option<Box<IdempotencyRecord>>,
    /// A body that is not JSON (an HTML page, a CSV file) and its media type.
    pub document: Option<(&'static str, String)>,
}

impl Reply {
    pub fn json(status: StatusCode, body: &impl Serialize) -> Result<Self, ApiError> {
        let body = serde_json::to_value(body).map_err(ApiError::internal)?;
        Ok(Self {
            status,
            body: Some(body),
            headers: Vec::new(),
            replay: None,
            document: None,
        })
    }

    pub fn ok(body: &impl Serialize) -> Result<Self, ApiError> {
        Self::json(StatusCode::OK, body)
    }

    /// 201 with a `Location` header naming the new resource.
    pub fn created(body: &impl Serialize, location: String) -> Result<Self, ApiError> {
        Ok(Self::json(StatusCode::CREATED, body)?.header("location", location))
    }

    /// A status with no body (e.g. 304).
    pub fn empty(status: StatusCode) -> Self {
        Self {
            status,
            body: None,
            headers: Vec::new(),
            replay: None,
            document: None,
        }
    }

    /// 200 with a document of `media_type` (`text/html; charset=utf-8`, `text/csv; ...`).
    pub fn document(media_type: &'static str, body: String) -> Self {
        Self {
            document: Some((media_type, body)),
            ..Self::empty(StatusCode::OK)
        }
    }

    /// What was answered the first time this idempotency key was used.
    pub fn replay(record: IdempotencyRecord) -> Self {
        Self {
            status: StatusCode::OK,
            body: None,
            headers: Vec::new(),
            replay: Some(Box::new(record)),
            document: None,
        }
    }

    /// A store write whose idempotency key turned out to be used: the stored answer.
    pub fn or_replay<T>(result: Result<T, StoreError>) -> Result<Result<T, Reply>, ApiError> {
        match result {
            Ok(value) => Ok(Ok(value)),
            Err(StoreError::IdempotencyReplay(record)) => Ok(Err(Reply::replay(*record))),
            Err(error) => Err(error.into()),
        }
    }

    /// A use case's outcome: rendered by `render` when this request did the work, the stored
    /// answer when it was a replay.
    pub fn from_outcome<T>(
        outcome: Replayable<T>,
        render: impl FnOnce(&T) -> Result<Reply, ApiError>,
    ) -> Result<Reply, ApiError> {
        match outcome {
            Replayable::Done(value) => render(&value),
            Replayable::Replayed(record) => Ok(Reply::replay(record)),
        }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub fn location(&self) -> Option<&str> {
        self.headers
            .iter()
            .find(|(name, _)| *name == "location")
            .map(|(_, v)| v.as_str())
    }

    pub fn body_text(&self) -> String {
        self.body.as_ref().map(Value::to_string).unwrap_or_default()
    }

    pub(crate) fn into_response(self) -> Response<Body> {
        let mut response = match self.document {
            Some((media_type, body)) => build(self.status, media_type, body),
            None => build(self.status, "application/json", self.body_text()),
        };
        for (name, value) in self.headers {
            if let Ok(value) = HeaderValue::from_str(&value) {
                response.headers_mut().append(name, value);
            }
        }
        response
    }
}

pub(crate) fn build(
    status: StatusCode,
    content_type: &'static str,
    body: String,
) -> Response<Body> {
    let mut response = Response::new(if body.is_empty() {
        Body::Empty
    } else {
        Body::Text(body)
    });
    *response.status_mut() = status;
    if status != StatusCode::NO_CONTENT {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    response
}
