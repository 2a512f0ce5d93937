# syntax=docker/dockerfile:1
#
# spine in a container: one static binary on a distroless base.
#   docker build -t spine .
#   docker run -p 7070:7070 -e SPINE_DATABASE_URL=... -e SPINE_NATS_URL=... spine
# docker-compose.yaml builds this image and wires it to NATS and PostgreSQL.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so editing code does not re-download them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# A static binary: the runtime image has no libc.
ENV CGO_ENABLED=0
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -o /out/spine ./cmd/spine
# The data dir (generated token secret, embedded NATS store when no
# SPINE_NATS_URL is set). Created here because distroless has no shell;
# a named volume mounted on /data starts with this owner.
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/spine /spine
COPY --from=build --chown=65532:65532 /out/data /data
# Listen on every interface: inside a container, 127.0.0.1 (spine's default)
# is unreachable from the host.
ENV SPINE_HTTP_ADDR=0.0.0.0:7070 \
    SPINE_DATA_DIR=/data
EXPOSE 7070
USER 65532:65532
ENTRYPOINT ["/spine"]
CMD ["serve"]
