# Top-level build entry points. Only the firmware targets live here so far.
#
#   make firmware        build every emulated firmware target and the host
#                        build (installs the cross toolchains if missing)
#   make firmware-test   build, then run the firmware and runner/wire tests,
#                        including the QEMU boards (installs QEMU if missing)
#   make rp2040js        the RP2040 emulator the pico-w test boots its image in: npm ci
#                        from firmware/tools/rp2040js's lockfile into the cache folder
#                        (scripts/cachedir)/rp2040js

# go.mod names Go 1.27: every go command here uses that toolchain.
export GOTOOLCHAIN := go1.27.3

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# apt-get update runs only when an install fails for want of package lists.
define apt_install
	$(SUDO) apt-get install -y --no-install-recommends $(1) || \
		{ $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends $(1); }
endef

.PHONY: firmware firmware-test firmware-toolchains firmware-qemu rp2040js

firmware-toolchains:
	@pkgs=""; \
	command -v arm-none-eabi-gcc >/dev/null || pkgs="$$pkgs gcc-arm-none-eabi binutils-arm-none-eabi"; \
	command -v riscv64-unknown-elf-gcc >/dev/null || pkgs="$$pkgs gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf"; \
	command -v cc >/dev/null || pkgs="$$pkgs gcc libc6-dev"; \
	if [ -n "$$pkgs" ]; then echo "installing:$$pkgs"; $(call apt_install,$$pkgs); fi

firmware-qemu:
	@pkgs=""; \
	command -v qemu-system-arm >/dev/null || pkgs="$$pkgs qemu-system-arm"; \
	command -v qemu-system-riscv32 >/dev/null || pkgs="$$pkgs qemu-system-misc"; \
	if [ -n "$$pkgs" ]; then echo "installing:$$pkgs"; $(call apt_install,$$pkgs); fi

firmware: firmware-toolchains
	$(MAKE) -C firmware all

# Installed again only when the lockfile changed (npm ci removes node_modules first), in the
# cache folder outside the checkout (scripts/cachedir), so a fresh clone reuses it.
RP2040JS_DIR ?= $(shell scripts/cachedir)/rp2040js
rp2040js:
	@command -v npm >/dev/null || { echo "installing: nodejs npm"; $(call apt_install,nodejs npm); }
	@mkdir -p $(RP2040JS_DIR)
	@if ! cmp -s firmware/tools/rp2040js/package-lock.json $(RP2040JS_DIR)/package-lock.json || \
		[ ! -f $(RP2040JS_DIR)/node_modules/rp2040js/package.json ]; then \
		cp firmware/tools/rp2040js/package.json firmware/tools/rp2040js/package-lock.json $(RP2040JS_DIR)/ && \
		cd $(RP2040JS_DIR) && npm ci --no-audit --no-fund; fi

firmware-test: firmware firmware-qemu rp2040js
	go test ./firmware/... ./runner/wire/...
