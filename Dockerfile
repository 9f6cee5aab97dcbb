# pqrepro: one binary, built in a Go image, run from a small Debian runtime image.
#
#   docker build -t pqrepro .
#   docker run -p 8080:8080 -v pqrepro-data:/data pqrepro
#
# With the emulated boards (QEMU and the firmware built for them) in the image:
#
#   docker build --build-arg WITH_EMULATORS=1 -t pqrepro-emu .
#
# The portal keeps its SQLite database, blobs and the local runner's keys in /data (a
# volume). The administrator's token is printed on first start (docker logs), or set it
# with -e PQREPRO_ADMIN_TOKEN=... . Pass --no-local-runner (or PQREPRO_NO_LOCAL_RUNNER=1)
# to serve without the in-process runner.

FROM golang:1.27-bookworm AS build
ENV GOTOOLCHAIN=go1.27.3
ARG WITH_EMULATORS=0
WORKDIR /src
# cgo is needed for SQLite (mattn/go-sqlite3).
ENV CGO_ENABLED=1
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/pqrepro ./cmd/pqrepro
# The firmware for the emulated boards, built with Debian's cross toolchains (optional).
RUN mkdir -p /out/firmware && if [ "$WITH_EMULATORS" = 1 ]; then \
	apt-get update && apt-get install -y --no-install-recommends gcc-arm-none-eabi binutils-arm-none-eabi \
		gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf make && \
	make -C firmware qemu-mps2-an386 qemu-riscv32-virt && \
	for t in qemu-mps2-an386 qemu-riscv32-virt; do mkdir -p /out/firmware/$t && \
		cp firmware/build/$t/pqrepro-fw.elf firmware/build/$t/metadata.json /out/firmware/$t/; done; \
	fi

FROM debian:bookworm-slim
ARG WITH_EMULATORS=0
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
	&& if [ "$WITH_EMULATORS" = 1 ]; then apt-get install -y --no-install-recommends qemu-system-arm qemu-system-misc; fi \
	&& rm -rf /var/lib/apt/lists/* \
	&& useradd --system --uid 10001 --home /data pqrepro && mkdir -p /data && chown pqrepro /data
COPY --from=build /out/pqrepro /usr/local/bin/pqrepro
COPY --from=build /out/firmware /opt/pqrepro/firmware
USER pqrepro
VOLUME /data
EXPOSE 8080
ENV PQREPRO_DATA=/data PQREPRO_ADDR=:8080 PQREPRO_FIRMWARE=/opt/pqrepro/firmware
ENTRYPOINT ["pqrepro"]
CMD ["serve"]
