//! Kubernetes `Status` answers and JSON responses: the leaf every HTTP
//! part of the emulator (routing, reviews, watches) writes through, so none
//! of them imports another for it.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// A Kubernetes `Status` response.
pub(crate) fn status(
    code: StatusCode,
    reason: &str,
    message: &str,
    details: Option<Value>,
) -> Response {
    let mut body = status_object(code.as_u16(), reason, message);
    if let Some(d) = details {
        crate::field::set(&mut body, &["details"], d);
    }
    json_response(code, &body)
}

/// A `Status` object (also what a watch `ERROR` event carries).
pub(crate) fn status_object(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
}

pub(crate) fn json_response(code: StatusCode, body: &Value) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
