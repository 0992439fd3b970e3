//! Same-origin requests to the server's API. The browser sends the session
//! cookie with each of them; a 401 is told apart from every other failure,
//! because it means "show the sign-in form", not "try again", and so is a
//! 403, "you may not see this", which no retry changes.

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// A status and a body, whatever the status.
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// Why a GET gave no usable body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The server wants a sign-in (again).
    Unauthorized,
    /// The signed-in user may not see this.
    Forbidden,
    /// Anything else, in words for the page.
    Failed(String),
}

/// Sends `method url` with an optional JSON body; `Err` when no answer came.
pub async fn request(method: &str, url: &str, json_body: Option<&str>) -> Result<Answer, String> {
    let window = web_sys::window().ok_or("no window")?;
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    // Same origin only: the cookie is sent, and never to anyone else.
    init.set_credentials(web_sys::RequestCredentials::SameOrigin);
    if let Some(body) = json_body {
        let headers = web_sys::Headers::new().map_err(|_| "cannot make headers")?;
        headers
            .set("content-type", "application/json")
            .map_err(|_| "cannot set a header")?;
        init.set_headers(&headers);
        init.set_body(&wasm_bindgen::JsValue::from_str(body));
    }
    let response = JsFuture::from(window.fetch_with_str_and_init(url, &init))
        .await
        .map_err(|_| format!("cannot reach the server ({url})"))?;
    let response: web_sys::Response = response.dyn_into().map_err(|_| "not a response")?;
    let text = response.text().map_err(|_| "no body")?;
    let body = JsFuture::from(text)
        .await
        .map_err(|_| "cannot read the body".to_string())?
        .as_string()
        .unwrap_or_default();
    Ok(Answer {
        status: response.status(),
        body,
    })
}

/// GETs `url`'s body, which only a 2xx answer gives.
pub async fn fetch_text(url: &str) -> Result<String, FetchError> {
    let answer = request("GET", url, None)
        .await
        .map_err(FetchError::Failed)?;
    match answer.status {
        200..=299 => Ok(answer.body),
        401 => Err(FetchError::Unauthorized),
        403 => Err(FetchError::Forbidden),
        status => Err(FetchError::Failed(format!("{url}: HTTP {status}"))),
    }
}

/// The status a GET of `url` answers, without reading the body: an event
/// stream's body never ends, so the request is aborted once its head
/// arrived. `Err` when no answer came. This is how the page learns why the
/// browser gave up on an `EventSource`, which does not tell.
pub async fn probe_status(url: &str) -> Result<u16, String> {
    let window = web_sys::window().ok_or("no window")?;
    let controller = web_sys::AbortController::new().map_err(|_| "cannot abort requests")?;
    let init = web_sys::RequestInit::new();
    init.set_method("GET");
    init.set_credentials(web_sys::RequestCredentials::SameOrigin);
    init.set_signal(Some(&controller.signal()));
    let response = JsFuture::from(window.fetch_with_str_and_init(url, &init))
        .await
        .map_err(|_| format!("cannot reach the server ({url})"));
    // Ends the body (an allowed stream would stay open) whatever came.
    controller.abort();
    let response: web_sys::Response = response?.dyn_into().map_err(|_| "not a response")?;
    Ok(response.status())
}
