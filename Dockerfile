# pqrepro: one binary, built in a Go image, run from a small Debian runtime image.
#
#   docker build -t pqrepro .
#   docker run -p 8080:8080 -v pqrepro-data:/data pqrepro
#
# The portal keeps its SQLite database, blobs and the local runner's keys in /data (a
# volume). The administrator's token is printed on first start (docker logs), or set it
# with -e PQREPRO_ADMIN_TOKEN=... . Pass --no-local-runner (or PQREPRO_NO_LOCAL_RUNNER=1)
# to serve without the in-process host runner.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# cgo is needed for SQLite (mattn/go-sqlite3).
ENV CGO_ENABLED=1
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/pqrepro ./cmd/pqrepro

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/* \
	&& useradd --system --uid 10001 --home /data pqrepro && mkdir -p /data && chown pqrepro /data
COPY --from=build /out/pqrepro /usr/local/bin/pqrepro
USER pqrepro
VOLUME /data
EXPOSE 8080
ENV PQREPRO_DATA=/data PQREPRO_ADDR=:8080
ENTRYPOINT ["pqrepro"]
CMD ["serve"]
