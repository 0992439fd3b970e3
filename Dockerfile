# dispatch-dash: the server image. Multi-stage: build with the Rust
# toolchain, run from a minimal non-root base.
#
# Both bases are pinned by their index digest, so a rebuild gets the same
# toolchain and the same runtime files until the digest is bumped on
# purpose (server/tests/deploy.rs checks that every FROM is pinned). To
# bump one, read the tag's current digest and review what changed:
#   docker buildx imagetools inspect rust:1.89-bookworm
#   docker buildx imagetools inspect gcr.io/distroless/cc-debian12:nonroot
FROM rust:1.89-bookworm@sha256:948f9b08a66e7fe01b03a98ef1c7568292e07ec2e4fe90d88c07bb14563c84ff AS build
WORKDIR /src
# dist/ (the web client, from scripts/build-web.sh) is embedded by server/build.rs.
COPY . .
RUN cargo build --locked --release -p dispatch-dash --bin dispatch-dash \
 && cp target/release/dispatch-dash /dispatch-dash

FROM gcr.io/distroless/cc-debian12:nonroot@sha256:9dac0a79194e45a7da0158a9c6da57b217585af0786db3845d1f0ec1a0dd182f
COPY --from=build /dispatch-dash /usr/local/bin/dispatch-dash
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/dispatch-dash"]
# Reachable from outside the container, so never without authentication.
# Plain HTTP: TLS is for a proxy in front (see docs/deploy.md).
CMD ["serve", "--listen", "0.0.0.0:8080", "--auth", "kubernetes", "--allow-plaintext"]
