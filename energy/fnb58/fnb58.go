// Package fnb58 reads the power captures of a FNIRSI FNB58 USB meter: the desktop
// application's own capture file (.cfn) and its CSV export. It reads exactly the
// single-channel power layout seen in paper002's 371 published captures and refuses any other
// header, channel count or quantity, naming the field, rather than guessing.
//
// # The CSV export
//
// Three header lines, then one "time,power" row per sample (seconds, watts, "." decimals):
//
//	# 50.0 sps, start/stop: 50/0 mA (5 s), channels: 1
//	# P min: 2.4007591992, P max: 2.7639580533
//	Time,Power
//	0.00000000,2.43077589
//	0.02000000,2.49715435
//
// The first line gives the nominal rate, the recording trigger (start and stop currents in mA
// and a time in seconds) and the channel count; the second the extremes of the capture (ten
// decimals); the rows give times and powers with eight decimals. A spreadsheet's re-save
// (paper002's Pi 3 files) is also read: every line then ends in a comma, numbers lose their
// trailing zeros, and a last row with an empty time holds the capture's mean, which must equal
// the mean of the rows within its printed digits. Lines end in LF or CRLF; the file must end
// with a newline (a missing one means it was cut off).
//
// # The .cfn capture file
//
// Little-endian throughout; a 49-byte header, then the samples:
//
//	offset size  field
//	     0    8  rate          float64, samples per second (50)
//	     8    4  start current uint32, mA: recording starts above it (50)
//	    12    4  stop current  uint32, mA: recording stops below it (0)
//	    16    4  trigger time  uint32, s: the "(5 s)" of the CSV header (5 or 360)
//	    20    2  channels      uint16, 1
//	    22    2  quantity      uint16, 4 in every capture seen (all of them power)
//	    24    5  channel bytes ff 55 ff ff 01 in every capture seen (meaning not known)
//	    29    8  P max         float64, W: the largest power in the capture
//	    37    8  P min         float64, W: the smallest
//	    45    4  count         uint32, samples that follow
//	    49 16·n  samples       float64 time (s), float64 power (W), count times
//
// This layout is derived from the 371 pairs of .cfn and CSV files the paper's authors
// published (the CSVs are the application's exports of the .cfn files): every field above was
// checked against its CSV header, every sample against its row (within the CSV's rounding,
// 5e-9 W), and every file's size is exactly 49 + 16·count bytes. The quantity code and the
// five channel bytes are constant in all of them and their meaning is not documented; a file
// with other values, another channel count, extremes that do not match its samples, or bytes
// beyond the last sample is refused with the field named. docs/ENERGY.md has the derivation.
package fnb58

import (
	"errors"
	"fmt"

	"pqrepro/energy"
)

// ErrTruncated is wrapped by every error about a capture that ends early.
var ErrTruncated = errors.New("truncated")

// ErrLayout is wrapped by every error about a header or layout this package does not read
// (another channel count, quantity or channel bytes): the file may be valid for the meter, but
// it is not the single-channel power layout these readers were derived from.
var ErrLayout = errors.New("unsupported layout")

// Capture is one FNB58 capture: its header as recorded and its samples as a trace.
type Capture struct {
	energy.Trace
	// StartMA and StopMA are the recording trigger's currents (mA); TriggerSeconds its time.
	StartMA, StopMA, TriggerSeconds int
	// Channels is the channel count (always 1: other counts are refused).
	Channels int
	// PMin and PMax are the capture's extremes as its header states them (W).
	PMin, PMax float64
	// StatedMean is the mean written in a spreadsheet re-save's last row, 0 when none; it has
	// been checked against the samples.
	StatedMean float64
}

// The values every capture seen holds in its fields of unknown meaning.
const (
	quantityPower = 4
)

var channelBytes = [5]byte{0xff, 0x55, 0xff, 0xff, 0x01}

// checkExtremes checks a header's extremes against the samples within tol watts.
func checkExtremes(c *Capture, tol float64) error {
	lo, hi := c.Power[0], c.Power[0]
	for _, p := range c.Power {
		lo, hi = min(lo, p), max(hi, p)
	}
	if d := lo - c.PMin; d > tol || d < -tol {
		return fmt.Errorf("%s: P min %.10g W in the header, the smallest sample is %.10g W", c.Source, c.PMin, lo)
	}
	if d := hi - c.PMax; d > tol || d < -tol {
		return fmt.Errorf("%s: P max %.10g W in the header, the largest sample is %.10g W", c.Source, c.PMax, hi)
	}
	return nil
}
