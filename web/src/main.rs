#![forbid(unsafe_code)]

fn main() {
    web::mount();
}
