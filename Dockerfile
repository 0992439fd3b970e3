# dispatch-dash: the server image. Multi-stage: build with the Rust
# toolchain, run from a minimal non-root base.
FROM rust:1.89-bookworm AS build
WORKDIR /src
# dist/ (the web client, from scripts/build-web.sh) is embedded by server/build.rs.
COPY . .
RUN cargo build --locked --release -p dispatch-dash --bin dispatch-dash \
 && cp target/release/dispatch-dash /dispatch-dash

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /dispatch-dash /usr/local/bin/dispatch-dash
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/dispatch-dash"]
# Reachable from outside the container, so never without authentication.
# Plain HTTP: TLS is for a proxy in front (see docs/deploy.md).
CMD ["serve", "--listen", "0.0.0.0:8080", "--auth", "kubernetes", "--allow-plaintext"]
