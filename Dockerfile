# augur: a reverse proxy for Ollama.
# Build: docker build -t augur .
# Run:   docker run -p 11435:11435 -e AUGUR_UPSTREAM=http://host.docker.internal:11434 \
#          -e AUGUR_API_KEY=<a key for your clients> -e AUGUR_ADMIN_TOKEN=<a token for ops> augur
# augur listens on 0.0.0.0 in the container: it refuses to start without an
# API key (configs/docker/policies/00-keys.yaml reads AUGUR_API_KEY) and
# without an admin token.

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY tests/fake-ollama ./tests/fake-ollama
COPY bench/loadgen ./bench/loadgen
COPY configs ./configs
RUN cargo build --release --locked --bin augur

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /etc/augur --shell /usr/sbin/nologin augur
WORKDIR /etc/augur
COPY --from=build /src/target/release/augur /usr/local/bin/augur
COPY configs ./configs
COPY configs/docker/policies ./policies
COPY policies/example.yaml ./policies/example.yaml
COPY schemas ./schemas
USER augur
ENV AUGUR_LISTEN=0.0.0.0:11435 \
    AUGUR_ADMIN_LISTEN=0.0.0.0:11436 \
    AUGUR_UPSTREAM=http://ollama:11434
EXPOSE 11435 11436
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/augur"]
