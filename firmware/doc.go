// Package firmware holds the device side of pqrepro: the C firmware (core/,
// crypto/, boards/), its protocol (PROTOCOL.md) and build (Makefile). The Go
// code here is only its tests, which check the C crypto against NIST's ACVP
// vectors, Go's standard library and circl, and the build tools under tools/.
package firmware
