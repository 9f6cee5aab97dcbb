package fnb58

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"pqrepro/energy"
)

// cfnHeader is the size of a .cfn file's header in bytes.
const cfnHeader = 49

// ReadCFN reads a .cfn capture file (see the package documentation) named name in errors.
// It reads exactly the header and the count of samples the header states; a shorter file is
// ErrTruncated, a header this package does not read is ErrLayout, and a byte after the last
// sample is an error. Times must lie on the rate's grid and the header's extremes must equal
// the samples'.
func ReadCFN(r io.Reader, name string) (*Capture, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var h [cfnHeader]byte
	if n, err := io.ReadFull(br, h[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: %w: %d of the header's %d bytes", name, ErrTruncated, n, cfnHeader)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	le := binary.LittleEndian
	c := &Capture{Trace: energy.Trace{Source: name, Rate: math.Float64frombits(le.Uint64(h[0:]))}}
	c.StartMA, c.StopMA, c.TriggerSeconds = int(le.Uint32(h[8:])), int(le.Uint32(h[12:])), int(le.Uint32(h[16:]))
	c.Channels = int(le.Uint16(h[20:]))
	quantity := le.Uint16(h[22:])
	c.PMax = math.Float64frombits(le.Uint64(h[29:]))
	c.PMin = math.Float64frombits(le.Uint64(h[37:]))
	count := le.Uint32(h[45:])
	switch {
	case !(c.Rate > 0 && c.Rate <= energy.MaxRate):
		return nil, fmt.Errorf("%s: rate (byte 0) %g samples/s: want (0, %g]", name, c.Rate, float64(energy.MaxRate))
	case c.Channels != 1:
		return nil, fmt.Errorf("%s: %w: channels (byte 20) is %d; only single-channel captures are read", name, ErrLayout, c.Channels)
	case quantity != quantityPower:
		return nil, fmt.Errorf("%s: %w: quantity (byte 22) is %d; only %d (power, as in every capture this reader was derived from) is read", name, ErrLayout, quantity, quantityPower)
	case [5]byte(h[24:29]) != channelBytes:
		return nil, fmt.Errorf("%s: %w: channel bytes (bytes 24-28) are % x; only % x (as in every capture this reader was derived from) are read", name, ErrLayout, h[24:29], channelBytes[:])
	case count < 2:
		return nil, fmt.Errorf("%s: count (byte 45) is %d: a capture needs two or more samples", name, count)
	case count > energy.MaxSamples:
		return nil, fmt.Errorf("%s: count (byte 45) is %d: more than the limit of %d", name, count, energy.MaxSamples)
	}
	c.Time = make([]float64, 0, min(count, 1<<16))
	c.Power = make([]float64, 0, min(count, 1<<16))
	var s [16]byte
	for i := range int(count) {
		if _, err := io.ReadFull(br, s[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("%s: %w: %d of the %d samples the header states", name, ErrTruncated, i, count)
			}
			return nil, fmt.Errorf("%s: sample %d: %w", name, i, err)
		}
		t, p := math.Float64frombits(le.Uint64(s[0:])), math.Float64frombits(le.Uint64(s[8:]))
		if math.IsNaN(p) || math.IsInf(p, 0) {
			return nil, fmt.Errorf("%s: sample %d (byte %d): power %g is not a finite number", name, i, cfnHeader+16*i+8, p)
		}
		if err := energy.OnGrid(t, i, c.Rate); err != nil {
			return nil, fmt.Errorf("%s: sample %d (byte %d): %w", name, i, cfnHeader+16*i, err)
		}
		c.Time, c.Power = append(c.Time, t), append(c.Power, p)
	}
	if _, err := br.ReadByte(); err == nil {
		return nil, fmt.Errorf("%s: bytes after the last of the %d samples (byte %d on): not the layout this reader knows", name, count, cfnHeader+16*int(count))
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := checkExtremes(c, 0); err != nil {
		return nil, err
	}
	return c, nil
}
