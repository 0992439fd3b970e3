//! The web UI, embedded at build time by `build.rs` from the repository's
//! `dist/` (see `scripts/build-web.sh`). [`router`] serves it: every file by
//! its path, `index.html` for `/` and for client-side routes (paths whose
//! last segment has no extension), with its content type, caching headers,
//! `X-Content-Type-Options: nosniff` and a strict Content-Security-Policy.
//! When nothing was embedded, every path answers 404 with a hint.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::Router;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/assets.rs"));
}

/// One embedded file.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// The URL path, `/index.html` say.
    pub path: &'static str,
    pub bytes: &'static [u8],
    pub content_type: &'static str,
}

/// Every embedded file.
pub fn files() -> impl Iterator<Item = Asset> {
    embedded::FILES
        .iter()
        .map(|(path, bytes, content_type)| Asset {
            path,
            bytes,
            content_type,
        })
}

/// The Content-Security-Policy of every response: only this origin, wasm
/// compilation (`'wasm-unsafe-eval'`), and the hashed inline start-up script
/// Trunk writes; no inline style attributes, no plugins, no framing.
pub fn content_security_policy(script_hashes: &str) -> String {
    let scripts = if script_hashes.is_empty() {
        String::new()
    } else {
        format!(" {script_hashes}")
    };
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{scripts}; style-src 'self'; \
         img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; \
         base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
}

/// Trunk names built files `<stem>-<16 hex digits>.<ext>`: such a file never
/// changes under its name.
fn is_hashed(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    let stem = stem.strip_suffix("_bg").unwrap_or(stem);
    stem.rsplit_once('-')
        .is_some_and(|(_, h)| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The response for `method path` from the file table `files`.
pub fn respond(files: &[Asset], csp: &str, method: &Method, path: &str) -> Response {
    let plain = |status: StatusCode, text: &'static str| {
        let mut r = Response::new(Body::from(text));
        *r.status_mut() = status;
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        r
    };
    if method != Method::GET && method != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let find = |p: &str| files.iter().find(|a| a.path == p);
    let last = path.rsplit('/').next().unwrap_or("");
    let asset = match find(path) {
        Some(a) => Some(a),
        None if path == "/" || path.starts_with("/api/") => {
            if path == "/" {
                find("/index.html")
            } else {
                None
            }
        }
        None if !last.contains('.') => find("/index.html"),
        None => None,
    };
    let mut response = match asset {
        Some(a) => {
            let body = if method == Method::HEAD {
                Body::empty()
            } else {
                Body::from(a.bytes)
            };
            let mut r = Response::new(body);
            let h = r.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(a.content_type));
            h.insert(header::CONTENT_LENGTH, HeaderValue::from(a.bytes.len()));
            h.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static(if is_hashed(a.path) {
                    "public, max-age=31536000, immutable"
                } else {
                    "no-cache"
                }),
            );
            r
        }
        None if files.is_empty() => plain(
            StatusCode::NOT_FOUND,
            "not found: this binary was built without the web UI (run scripts/build-web.sh, then rebuild)\n",
        ),
        None => plain(StatusCode::NOT_FOUND, "not found\n"),
    };
    let h = response.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(v) = HeaderValue::from_str(csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// The router of the embedded UI. Mount it as the fallback of the API
/// router, so that API routes keep precedence.
pub fn router() -> Router {
    let files: &'static [Asset] = Box::leak(files().collect::<Vec<_>>().into_boxed_slice());
    let csp: &'static str =
        Box::leak(content_security_policy(embedded::SCRIPT_HASHES).into_boxed_str());
    Router::new().fallback(move |request: Request| async move {
        respond(files, csp, request.method(), request.uri().path())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[Asset] = &[
        Asset {
            path: "/index.html",
            bytes: b"<!doctype html>",
            content_type: "text/html; charset=utf-8",
        },
        Asset {
            path: "/web-2b998edca7a93098_bg.wasm",
            bytes: b"\0asm",
            content_type: "application/wasm",
        },
    ];

    fn header(r: &Response, name: header::HeaderName) -> &str {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    #[test]
    fn serves_files_index_and_client_routes() {
        let csp = content_security_policy("'sha256-abc='");
        let wasm = respond(TABLE, &csp, &Method::GET, "/web-2b998edca7a93098_bg.wasm");
        assert_eq!(wasm.status(), StatusCode::OK);
        assert_eq!(header(&wasm, header::CONTENT_TYPE), "application/wasm");
        assert!(header(&wasm, header::CACHE_CONTROL).contains("immutable"));
        assert_eq!(header(&wasm, header::X_CONTENT_TYPE_OPTIONS), "nosniff");
        for path in ["/", "/explain", "/offline", "/queues"] {
            let r = respond(TABLE, &csp, &Method::GET, path);
            assert_eq!(r.status(), StatusCode::OK, "{path}");
            assert_eq!(header(&r, header::CONTENT_TYPE), "text/html; charset=utf-8");
            assert_eq!(header(&r, header::CACHE_CONTROL), "no-cache");
            let policy = header(&r, header::CONTENT_SECURITY_POLICY);
            assert!(policy.contains("script-src 'self' 'wasm-unsafe-eval' 'sha256-abc='"));
            assert!(!policy.contains("unsafe-inline"));
        }
        assert_eq!(
            respond(TABLE, &csp, &Method::GET, "/missing.js").status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            respond(TABLE, &csp, &Method::GET, "/api/v1/nope").status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            respond(TABLE, &csp, &Method::POST, "/").status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
        assert_eq!(
            respond(&[], &csp, &Method::GET, "/").status(),
            StatusCode::NOT_FOUND
        );
    }

    #[test]
    fn hashed_names() {
        assert!(is_hashed("/web-2b998edca7a93098.js"));
        assert!(is_hashed("/web-2b998edca7a93098_bg.wasm"));
        assert!(!is_hashed("/index.html"));
        assert!(!is_hashed("/favicon.svg"));
    }

    /// The embedded index.html, when there is one, is served with every
    /// inline script hashed in the policy.
    #[test]
    fn embedded_index_scripts_are_hashed() {
        let files: Vec<Asset> = files().collect();
        if let Some(index) = files.iter().find(|a| a.path == "/index.html") {
            let html = std::str::from_utf8(index.bytes).unwrap();
            // Every `<script>` without a `src` (Trunk's module loader, and
            // index.html's own early stream) is inline.
            let inline = html
                .split("<script")
                .skip(1)
                .filter(|rest| !rest.split('>').next().unwrap_or("").contains(" src="))
                .count();
            assert!(inline >= 2, "Trunk's loader and the early stream: {html}");
            assert_eq!(embedded::SCRIPT_HASHES.matches("'sha256-").count(), inline);
            assert!(files.iter().any(|a| a.content_type == "application/wasm"));
        } else {
            assert!(files.is_empty());
            assert!(embedded::SCRIPT_HASHES.is_empty());
        }
    }
}
