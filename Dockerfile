# One match per container: the entrypoint is `arena serve`.
#   docker build -t arena .
#   docker run --rm -p 27960:27960/udp -p 9100:9100 arena
# See DEPLOY.md for running many of them under Agones.
FROM rust:1.85-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p arena && cp target/release/arena /arena

FROM debian:bookworm-slim
# curl: the Agones readiness sidecar in deploy/fleet.yaml talks to the SDK with it.
RUN apt-get update && apt-get install -y --no-install-recommends curl ca-certificates \
    && rm -rf /var/lib/apt/lists/* && useradd --system --uid 10001 arena
COPY --from=build /arena /usr/local/bin/arena
USER arena
WORKDIR /home/arena
# Game traffic (UDP) and Prometheus metrics (TCP, /metrics).
EXPOSE 27960/udp 9100/tcp
# SIGTERM (docker stop, a pod deletion) drains the match: clients are told,
# the demo is finalized, the summary written, exit 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["arena", "serve"]
CMD ["--bind", "0.0.0.0:27960", "--metrics-bind", "0.0.0.0:9100", "--max-clients", "16", "--summary-json", "/home/arena/summary.json"]
