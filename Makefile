# Top-level build entry points. Only the firmware targets live here so far.
#
#   make firmware        build every emulated firmware target and the host
#                        build (installs the cross toolchains if missing)
#   make firmware-test   build, then run the firmware and runner/wire tests,
#                        including the QEMU boards (installs QEMU if missing)

# go.mod names Go 1.27: every go command here uses that toolchain.
export GOTOOLCHAIN := go1.27.3

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# apt-get update runs only when an install fails for want of package lists.
define apt_install
	$(SUDO) apt-get install -y --no-install-recommends $(1) || \
		{ $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends $(1); }
endef

.PHONY: firmware firmware-test firmware-toolchains firmware-qemu

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

firmware-test: firmware firmware-qemu
	go test ./firmware/... ./runner/wire/...
