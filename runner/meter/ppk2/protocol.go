// Package ppk2 reads a Nordic Power Profiler Kit II (PPK2) over its USB CDC-ACM serial port
// (/dev/ttyACMn, through go.bug.st/serial), and simulates one on a pty, replaying a recorded
// power capture.
//
// The protocol is per the vendor's published protocol, not verified on a PPK2 here: it was
// written from the source of Nordic's own PPK2 desktop application (its serial device code) and
// the notes of the community's Python API that follows it, and no PPK2 was attached while
// writing or testing it. The simulator speaks the same description, so the tests show that the
// driver and that description agree, not that a PPK2 does.
//
// # The protocol as published
//
// The host writes commands of one to three bytes and the PPK2 answers only two of them:
//
//	0x19            get metadata: the PPK2 answers with text lines "KEY: VALUE" ending "END"
//	0x11 m          power mode: m = 1 ampere meter (the board has its own supply, the PPK2
//	                measures the current through it), m = 2 source meter (the PPK2 supplies VDD)
//	0x0d hi lo      VDD in mV, big-endian, 800..5000: the voltage supplied in source mode and
//	                the one the calibration's S term is evaluated at in both modes
//	0x0c d          the board's power, d = 1 on, 0 off (source mode)
//	0x06 / 0x07     average start / stop: start and stop the sample stream
//
// Streaming, the PPK2 sends 100,000 samples per second, each a 32-bit little-endian word:
//
//	bits  0..13  ADC value (the current is computed from 4 × it)
//	bits 14..16  measurement range 0..4 (the PPK2 switches its shunt by itself)
//	bit  17      not used by the published parser
//	bits 18..23  a counter, one more (mod 64) for each sample: a gap or a garbled word shows
//	bits 24..31  the eight digital inputs of the logic port, bit i for input D(i)
//
// A sample's current, in amperes, from the metadata's calibration for its range r:
//
//	x = (4 × ADC − O[r]) × (1.8 / 163840) / R[r]
//	I = UG[r] × (x × (GS[r] × x + GI[r]) + S[r] × VDD/1000 + I[r])
//
// Nordic's application smooths the samples around a range switch (its "spike filter"), a
// display choice this driver does not make: a Sample holds the calibrated current as the
// formula gives it. The PPK2 measures no voltage: a Sample's voltage is the VDD set with 0x0d
// (supplied by the PPK2 in source mode; the board's own supply, as the lab states it, in
// ampere mode).
package ppk2

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"pqrepro/runner/meter"
)

// The protocol's constants, per the vendor's published protocol.
const (
	// RawRate is the samples per second the PPK2 streams.
	RawRate = 100_000
	// WordSize is the size of one sample word.
	WordSize = 4
	// Ranges is the number of measurement ranges.
	Ranges = 5
	// MinMillivolts and MaxMillivolts bound VDD.
	MinMillivolts, MaxMillivolts = 800, 5000
	// MarkerInputs is the logic port's inputs.
	MarkerInputs = 8
	// Note labels everything this driver reports.
	Note = "per the vendor's published protocol, not verified on a PPK2 here"
	// MaxMetadata bounds the metadata text.
	MaxMetadata = 4096

	adcMult     = 1.8 / 163840
	counterMask = 0x3f
)

// The host's commands.
const (
	CmdAverageStart  = 0x06
	CmdAverageStop   = 0x07
	CmdDeviceRunning = 0x0c
	CmdRegulator     = 0x0d
	CmdPowerMode     = 0x11
	CmdGetMetadata   = 0x19
)

// Mode is the PPK2's power mode, the argument of command 0x11.
type Mode byte

// The power modes.
const (
	// Ampere: the PPK2 measures the current of a board on its own supply.
	Ampere Mode = 1
	// Source: the PPK2 supplies the board at VDD and measures its current.
	Source Mode = 2
)

func (m Mode) String() string {
	switch m {
	case Ampere:
		return "ampere"
	case Source:
		return "source"
	}
	return fmt.Sprintf("mode %d", byte(m))
}

// ParseMode reads "source" or "ampere".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "source":
		return Source, nil
	case "ampere":
		return Ampere, nil
	}
	return 0, fmt.Errorf("ppk2 mode %q: want source or ampere", s)
}

// Regulator is the command setting VDD to mv millivolts.
func Regulator(mv int) []byte { return []byte{CmdRegulator, byte(mv >> 8), byte(mv)} }

// commandLen is each command's length with its arguments; 0 for an unknown opcode.
func commandLen(op byte) int {
	switch op {
	case CmdAverageStart, CmdAverageStop, CmdGetMetadata:
		return 1
	case CmdDeviceRunning, CmdPowerMode:
		return 2
	case CmdRegulator:
		return 3
	}
	return 0
}

// SplitCommand takes the first whole command off b: the command, the rest, or ok false when b
// holds only part of one. An opcode this package does not know is an error.
func SplitCommand(b []byte) (cmd, rest []byte, ok bool, err error) {
	if len(b) == 0 {
		return nil, b, false, nil
	}
	n := commandLen(b[0])
	if n == 0 {
		return nil, b, false, fmt.Errorf("%w: command %#02x is not one of the published ones", meter.ErrMalformed, b[0])
	}
	if len(b) < n {
		return nil, b, false, nil
	}
	return b[:n], b[n:], true, nil
}

// Word is one decoded sample word.
type Word struct {
	ADC     uint16 // 14 bits
	Range   uint8  // 0..4
	Counter uint8  // 6 bits
	Logic   uint8  // the logic port, bit i for input D(i)
}

// DecodeWord splits a little-endian word into its fields; a range above 4 is ErrMalformed.
func DecodeWord(b []byte) (Word, error) {
	v := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	w := Word{ADC: uint16(v & 0x3fff), Range: uint8(v >> 14 & 7), Counter: uint8(v >> 18 & counterMask), Logic: uint8(v >> 24)}
	if w.Range >= Ranges {
		return w, fmt.Errorf("%w: range %d, want 0..%d", meter.ErrMalformed, w.Range, Ranges-1)
	}
	return w, nil
}

// Encode is the word as the PPK2 sends it (bit 17 clear).
func (w Word) Encode() [WordSize]byte {
	v := uint32(w.ADC&0x3fff) | uint32(w.Range&7)<<14 | uint32(w.Counter&counterMask)<<18 | uint32(w.Logic)<<24
	return [WordSize]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}
}

// Modifiers is the calibration the metadata carries, per range.
type Modifiers struct {
	R, GS, GI, O, S, I, UG [Ranges]float64
	// Calibrated, HW and IA are the metadata's fields of those names as sent ("" if absent).
	Calibrated, HW, IA string
	// Defaulted names the fields that were absent or not a number ("-nan") and took the
	// published default, as Nordic's application does.
	Defaulted []string
}

// DefaultModifiers are the published defaults: the shunt resistances of the five ranges,
// unit gains, no offsets.
func DefaultModifiers() Modifiers {
	one := [Ranges]float64{1, 1, 1, 1, 1}
	return Modifiers{R: [Ranges]float64{1031.64, 101.65, 10.15, 0.94, 0.043}, GS: one, GI: one, UG: one}
}

// field is the per-range array of a metadata key ("r", "gs", ...), nil for another key.
func (m *Modifiers) field(key string) *[Ranges]float64 {
	switch key {
	case "r":
		return &m.R
	case "gs":
		return &m.GS
	case "gi":
		return &m.GI
	case "o":
		return &m.O
	case "s":
		return &m.S
	case "i":
		return &m.I
	case "ug":
		return &m.UG
	}
	return nil
}

// ErrIncomplete is ParseMetadata's error for text without its END line yet.
var ErrIncomplete = errors.New("metadata without its END line")

// ParseMetadata reads the answer to command 0x19: "KEY: VALUE" lines, then END. Keys are
// case-insensitive; a per-range key is a field name and a range digit (R0..R4, GS0, ..., UG4).
// A value that is absent, not a number, or a zero resistance takes the default (and is named
// in Defaulted); a line that is not "KEY: VALUE", or a number that does not parse, is an
// error wrapping meter.ErrMalformed with its line.
func ParseMetadata(text []byte) (Modifiers, error) {
	m := DefaultModifiers()
	if len(text) > MaxMetadata {
		return m, fmt.Errorf("%w: metadata of %d bytes, more than %d", meter.ErrMalformed, len(text), MaxMetadata)
	}
	body, _, ok := bytes.Cut(text, []byte("END"))
	if !ok {
		return m, ErrIncomplete
	}
	set := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if err := m.setLine(line, set); err != nil {
			return m, fmt.Errorf("%w: metadata line %d %q: %v", meter.ErrMalformed, i+1, line, err)
		}
	}
	for _, k := range []string{"r", "gs", "gi", "o", "s", "i", "ug"} {
		for r := range Ranges {
			if name := k + strconv.Itoa(r); !set[name] {
				m.Defaulted = append(m.Defaulted, strings.ToUpper(name))
			}
		}
	}
	return m, nil
}

// setLine applies one "KEY: VALUE" line; set records the per-range keys given a value.
func (m *Modifiers) setLine(line string, set map[string]bool) error {
	key, val, ok := strings.Cut(line, ":")
	if !ok {
		return errors.New(`want "KEY: VALUE"`)
	}
	key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
	switch key {
	case "calibrated":
		m.Calibrated = val
		return nil
	case "hw":
		m.HW = val
		return nil
	case "ia":
		m.IA = val
		return nil
	}
	if len(key) < 2 || key[len(key)-1] < '0' || key[len(key)-1] >= '0'+Ranges {
		return nil // a key the published parser does not read
	}
	f, r := m.field(key[:len(key)-1]), int(key[len(key)-1]-'0')
	if f == nil {
		return nil
	}
	if strings.Contains(strings.ToLower(val), "nan") {
		return nil // not a number: the default stays
	}
	v, err := strconv.ParseFloat(val, 64)
	if err != nil || math.IsInf(v, 0) {
		return fmt.Errorf("%s is not a number", strings.ToUpper(key))
	}
	if f == &m.R && v == 0 {
		return nil // a zero resistance, seen on some PPK2s: the default stays
	}
	f[r] = v
	set[key] = true
	return nil
}

// Amps is a word's current in amperes by the published formula, with VDD in millivolts.
func (m *Modifiers) Amps(w Word, mv int) float64 {
	r := w.Range
	x := (4*float64(w.ADC) - m.O[r]) * adcMult / m.R[r]
	return m.UG[r] * (x*(m.GS[r]*x+m.GI[r]) + m.S[r]*float64(mv)/1000 + m.I[r])
}

// Text is the metadata as the PPK2 sends it (the simulator's answer to 0x19).
func (m *Modifiers) Text() []byte {
	var b bytes.Buffer
	if m.Calibrated != "" {
		fmt.Fprintf(&b, "Calibrated: %s\n", m.Calibrated)
	}
	for _, f := range []struct {
		name string
		v    *[Ranges]float64
	}{{"R", &m.R}, {"GS", &m.GS}, {"GI", &m.GI}, {"O", &m.O}, {"S", &m.S}, {"I", &m.I}, {"UG", &m.UG}} {
		for r, v := range f.v {
			fmt.Fprintf(&b, "%s%d: %s\n", f.name, r, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	if m.HW != "" {
		fmt.Fprintf(&b, "HW: %s\n", m.HW)
	}
	if m.IA != "" {
		fmt.Fprintf(&b, "IA: %s\n", m.IA)
	}
	b.WriteString("END\n")
	return b.Bytes()
}
