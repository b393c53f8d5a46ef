# The identity service (idsauth serve) in a container: a static binary,
# no shell, a non-root user. Build it from the repository's root:
#
#   podman build -t idsauth .          (or docker build)
#   podman run --rm -p 8080:8080 -p 127.0.0.1:9090:9090 \
#     -v /etc/idsauth:/etc/idsauth:ro idsauth
#
# Mount the configuration and its key files read-only at /etc/idsauth;
# idsauth.json names its keys relative to itself. The service runs as uid
# 65532: the key files must be readable by it (chown 65532, mode 0400).
# See docs/OPERATIONS.md.
#
# Images are named in full (registry/namespace/name): podman refuses a
# short name unless it is configured to guess a registry.

FROM docker.io/library/golang:1.26 AS build
WORKDIR /src
COPY . .
RUN CGO_ENABLED=0 go build -C cmd/idsauth -trimpath -ldflags="-s -w" -o /out/idsauth .

# scratch is no image (nothing is pulled): the empty root file system.
FROM scratch
# Root certificates, for a limiter store reached over TLS.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/
COPY --from=build /out/idsauth /idsauth
# A numeric user with no home and no shell: nothing runs as root.
USER 65532:65532
# In a container, the operations endpoints must be reachable by the
# runtime's probes and the metrics scraper: publish port 9090 only to
# them, since /metrics names the registered clients.
ENV IDSAUTH_CONFIG=/etc/idsauth/idsauth.json \
    IDSAUTH_ADDR=:8080 \
    IDSAUTH_OPS_ADDR=:9090 \
    IDSAUTH_LOG_FORMAT=json
EXPOSE 8080 9090
ENTRYPOINT ["/idsauth", "serve"]
