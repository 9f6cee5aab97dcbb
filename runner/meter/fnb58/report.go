// Package fnb58 reads a FNIRSI FNB58 USB power meter live, through Linux hidraw, with the
// standard library only; and simulates one, replaying a recorded capture through a
// socketpair that keeps message boundaries as hidraw does.
//
// The protocol is known per community documentation, not verified on a meter here: it was
// written from the public description of the reverse-engineered protocol (the
// fnirsi-usb-power-data-logger project's notes and logger), not from a vendor document, and no
// FNB58 was attached while writing or testing it. The simulator speaks the same description, so
// the tests show the driver and that description agree, not that a meter does.
//
// # The protocol as documented by the community
//
// The meter is a USB HID device, 2E3C:5558. The host starts streaming with three 64-byte
// output reports, command 0x81 then 0x82 twice, and keeps it alive with 0x83 about once a
// second. A command report is 0xaa, the command byte, 61 zero bytes and a CRC-8. Through hidraw
// a write carries a leading report number, 0 for a device without numbered reports: 65 bytes.
//
// The meter answers with 64-byte input reports. Byte 0 is 0xaa, byte 1 the report type (0x04
// for samples; other types are not documented and are skipped). A sample report holds four
// samples of 15 bytes from byte 2, 10 ms apart (100 samples/s):
//
//	offset size
//	     0    4  voltage, uint32 little-endian, 10 µV units
//	     4    4  current, uint32 little-endian, 10 µA units
//	     8    2  D+ voltage, uint16, mV
//	    10    2  D- voltage, uint16, mV
//	    12    1  undocumented (1 in the community's captures)
//	    13    2  temperature, uint16, 0.1 °C
//
// Byte 62 is undocumented; byte 63 is a CRC-8 over bytes 1..62 (polynomial 0x39, initial
// value 0x42, no reflection, no final xor). The documentation names no report counter, so a
// lost report cannot be seen in the reports themselves: this driver sees it as its sample
// count falling behind the host's clock (see Options.LossSlack).
package fnb58

import (
	"encoding/binary"
	"fmt"

	"pqrepro/runner/meter"
)

// The protocol's constants, per community documentation.
const (
	// VendorID and ProductID identify the meter on USB.
	VendorID, ProductID = 0x2E3C, 0x5558
	// ReportSize is the size of every input and output report.
	ReportSize = 64
	// SamplesPerReport is the samples of one sample report.
	SamplesPerReport = 4
	// Rate is the samples per second the meter streams.
	Rate = 100
	// Note labels everything this driver reports.
	Note = "per community documentation, not verified on a meter here"

	reportMagic  = 0xaa
	typeSamples  = 0x04
	sampleOffset = 2
	sampleSize   = 15
	crcPoly      = 0x39
	crcInit      = 0x42
)

// The host's commands.
const (
	cmdStart1   = 0x81
	cmdStart2   = 0x82
	cmdContinue = 0x83
)

// Reading is one decoded sample of a report.
type Reading struct {
	Volts, Amps    float64
	DPlus, DMinus  float64 // V
	Celsius        float64
	Undocumented12 byte
}

// CRC8 is the reports' checksum: polynomial 0x39, initial value 0x42, MSB first, no final xor.
func CRC8(b []byte) byte {
	c := byte(crcInit)
	for _, x := range b {
		c ^= x
		for range 8 {
			if c&0x80 != 0 {
				c = c<<1 ^ crcPoly
			} else {
				c <<= 1
			}
		}
	}
	return c
}

// ParseReport decodes one input report. It returns ok false, and no error, for a well-formed
// report of another type (not documented, skipped); an error wrapping meter.ErrMalformed names
// what is wrong: the size, the first byte or the checksum.
func ParseReport(b []byte) (rs [SamplesPerReport]Reading, ok bool, err error) {
	if len(b) != ReportSize {
		return rs, false, fmt.Errorf("%w: %d bytes, want %d", meter.ErrMalformed, len(b), ReportSize)
	}
	if b[0] != reportMagic {
		return rs, false, fmt.Errorf("%w: byte 0 is %#02x, want %#02x", meter.ErrMalformed, b[0], reportMagic)
	}
	if b[1] != typeSamples {
		return rs, false, nil
	}
	if got, want := b[ReportSize-1], CRC8(b[1:ReportSize-1]); got != want {
		return rs, false, fmt.Errorf("%w: CRC-8 %#02x in byte 63, bytes 1..62 give %#02x", meter.ErrMalformed, got, want)
	}
	for i := range rs {
		s := b[sampleOffset+i*sampleSize:]
		rs[i] = Reading{
			Volts:          float64(binary.LittleEndian.Uint32(s[0:])) / 1e5,
			Amps:           float64(binary.LittleEndian.Uint32(s[4:])) / 1e5,
			DPlus:          float64(binary.LittleEndian.Uint16(s[8:])) / 1e3,
			DMinus:         float64(binary.LittleEndian.Uint16(s[10:])) / 1e3,
			Undocumented12: s[12],
			Celsius:        float64(binary.LittleEndian.Uint16(s[13:])) / 10,
		}
	}
	return rs, true, nil
}

// Raw is one sample in the report's own units, for encoding (the simulator).
type Raw struct {
	MicroVolts10, MicroAmps10 uint32 // 10 µV and 10 µA units
}

// EncodeReport builds a sample report of four samples with its checksum. The fields the
// community documents but a power trace does not hold (D+, D-, temperature) are zero, and
// byte 12 of each sample is 1 as in the community's captures.
func EncodeReport(s [SamplesPerReport]Raw) []byte {
	b := make([]byte, ReportSize)
	b[0], b[1] = reportMagic, typeSamples
	for i, r := range s {
		o := b[sampleOffset+i*sampleSize:]
		binary.LittleEndian.PutUint32(o[0:], r.MicroVolts10)
		binary.LittleEndian.PutUint32(o[4:], r.MicroAmps10)
		o[12] = 1
	}
	b[ReportSize-1] = CRC8(b[1 : ReportSize-1])
	return b
}

// command is the hidraw write of a host command: report number 0, then the 64-byte report.
func command(code byte) []byte {
	b := make([]byte, ReportSize+1)
	b[1], b[2] = reportMagic, code
	b[ReportSize] = CRC8(b[2:ReportSize])
	return b
}

// ParseCommand decodes a host command as written to hidraw (65 bytes, report number 0).
func ParseCommand(b []byte) (byte, error) {
	switch {
	case len(b) != ReportSize+1:
		return 0, fmt.Errorf("command of %d bytes, want %d", len(b), ReportSize+1)
	case b[0] != 0 || b[1] != reportMagic:
		return 0, fmt.Errorf("command starts %#02x %#02x, want 0x00 0xaa", b[0], b[1])
	case b[ReportSize] != CRC8(b[2:ReportSize]):
		return 0, fmt.Errorf("command %#02x: bad CRC-8 %#02x", b[2], b[ReportSize])
	}
	return b[2], nil
}
