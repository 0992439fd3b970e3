#![forbid(unsafe_code)]
// No unwrap, expect, panic or unchecked indexing outside the tests, as in
// the engine: a bad object, request or frame is an error, not a crash. The
// few sites that cannot fail carry an `allow` that says why.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

fn main() {
    web::mount();
}
