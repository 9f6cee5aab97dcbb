package artifacts

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// FilePower is power.csv, the raw meter trace of a metered run: the run's idle window and
// each cell's load window, every sample as the meter reported it. Its energy figures are
// re-derived from it (energy.RederivePower); it is attested like samples.csv.
const FilePower = "power.csv"

// PowerHeader is power.csv's header. A row is one meter sample: the cell (empty algorithm
// and operation for the run's idle window), the window (idle or load), the sample's index in
// its window (0, 1, 2, ... : sample i is at i / the meter's rate in environment.json), and
// the bus voltage (V) and current (A) as the meter reported them.
var PowerHeader = []string{"algorithm", "operation", "window", "sample", "volts", "amps"}

// PowerMarkersColumn is power.csv's optional seventh column, written when the meter has logic
// inputs (a PPK2): the inputs during the sample, bit i for input i (0..255). A board raises its
// marker around each operation (LOOP), so the load windows mark every operation.
const PowerMarkersColumn = "markers"

// The windows of power.csv.
const (
	WindowIdle = "idle"
	WindowLoad = "load"
)

// MaxPowerSamples bounds one window of power.csv (an hour at 1,000 samples/s).
const MaxPowerSamples = 3_600_000

// PowerWindow is one recorded window: sample i's voltage and current.
type PowerWindow struct {
	Volts, Amps []float64
	// Markers is sample i's logic inputs; nil when the meter has none.
	Markers []uint8
}

// Watts is the window's power, sample by sample (volts × amps).
func (w *PowerWindow) Watts() []float64 {
	p := make([]float64, len(w.Volts))
	for i := range p {
		p[i] = w.Volts[i] * w.Amps[i]
	}
	return p
}

// Power is power.csv: the run's idle window and each metered cell's load window.
type Power struct {
	Idle *PowerWindow
	Load map[CellKey]*PowerWindow
	// Order is the load windows' cells in the file's order.
	Order []CellKey
}

// AddLoad adds cell k's load window.
func (p *Power) AddLoad(k CellKey, w *PowerWindow) {
	if p.Load == nil {
		p.Load = map[CellKey]*PowerWindow{}
	}
	if _, ok := p.Load[k]; !ok {
		p.Order = append(p.Order, k)
	}
	p.Load[k] = w
}

// FormatPower writes power.csv: the idle window, then each load window in Order, every
// number in its shortest form that reads back to the same float64; with the markers column
// when a window has markers (the meter has logic inputs).
func FormatPower(p *Power) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	markers := p.Idle != nil && p.Idle.Markers != nil
	for _, k := range p.Order {
		markers = markers || p.Load[k].Markers != nil
	}
	if markers {
		w.Write(append(slices.Clone(PowerHeader), PowerMarkersColumn))
	} else {
		w.Write(PowerHeader)
	}
	write := func(k CellKey, window string, pw *PowerWindow) {
		for i := range pw.Volts {
			rec := []string{k.Algorithm, k.Operation, window, strconv.Itoa(i),
				strconv.FormatFloat(pw.Volts[i], 'g', -1, 64), strconv.FormatFloat(pw.Amps[i], 'g', -1, 64)}
			if markers {
				m := uint8(0)
				if i < len(pw.Markers) {
					m = pw.Markers[i]
				}
				rec = append(rec, strconv.Itoa(int(m)))
			}
			w.Write(rec)
		}
	}
	if p.Idle != nil {
		write(CellKey{}, WindowIdle, p.Idle)
	}
	for _, k := range p.Order {
		write(k, WindowLoad, p.Load[k])
	}
	w.Flush()
	return b.Bytes()
}

// ParsePower reads power.csv strictly: the header, then rows of the header's columns; the
// idle window's rows name no cell, a load window's name one (no variant); indexes run 0, 1,
// 2, ... within a window, whose rows are contiguous; volts and amps are finite and
// non-negative; at most MaxPowerSamples per window and MaxCells load windows. Errors name the
// line and the column.
func ParsePower(data []byte) (*Power, error) {
	r, head, err := csvHead(data, FilePower, PowerHeader, -1)
	if err != nil {
		return nil, err
	}
	markers := slices.Equal(head, append(slices.Clone(PowerHeader), PowerMarkersColumn))
	if !slices.Equal(head, PowerHeader) && !markers {
		return nil, fmt.Errorf("%s line 1: header %v, want %v (and %s when the meter has logic inputs)", FilePower, head, PowerHeader, PowerMarkersColumn)
	}
	r.FieldsPerRecord = len(head)
	p := &Power{}
	var cur *PowerWindow
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return p, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", FilePower, err)
		}
		if cur, err = p.row(rec, cur, markers); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", FilePower, line, err)
		}
	}
}

// row adds one row to p; cur is the window of the row before; markers says the file has the
// markers column.
func (p *Power) row(rec []string, cur *PowerWindow, markers bool) (*PowerWindow, error) {
	k := CellKey{Algorithm: rec[0], Operation: rec[1]}
	idx, err := strconv.Atoi(rec[3])
	if err != nil || idx < 0 {
		return nil, fmt.Errorf("sample %q: not a non-negative integer", rec[3])
	}
	var w *PowerWindow
	switch rec[2] {
	case WindowIdle:
		if k != (CellKey{}) {
			return nil, fmt.Errorf("an idle row names a cell (%s %s); the idle window is the run's", k.Algorithm, k.Operation)
		}
		w = p.Idle
	case WindowLoad:
		if k.Algorithm == "" || k.Operation == "" {
			return nil, errors.New("a load row with an empty algorithm or operation")
		}
		w = p.Load[k]
	default:
		return nil, fmt.Errorf("window %q: want %s or %s", rec[2], WindowIdle, WindowLoad)
	}
	if idx == 0 {
		if w != nil {
			return nil, fmt.Errorf("a second %s window for %q", rec[2], k.Algorithm+" "+k.Operation)
		}
		if rec[2] == WindowLoad && len(p.Load) >= MaxCells {
			return nil, fmt.Errorf("more than %d load windows", MaxCells)
		}
		w = &PowerWindow{}
		if markers {
			w.Markers = []uint8{}
		}
		if rec[2] == WindowIdle {
			p.Idle = w
		} else {
			p.AddLoad(k, w)
		}
	} else if w == nil || w != cur || idx != len(w.Volts) {
		return nil, fmt.Errorf("sample %d of the %s window %q out of order (windows are contiguous, samples numbered from 0)", idx, rec[2], k.Algorithm+" "+k.Operation)
	}
	if len(w.Volts) >= MaxPowerSamples {
		return nil, fmt.Errorf("more than %d samples in one window", MaxPowerSamples)
	}
	v, err := powerValue(rec[4])
	if err != nil {
		return nil, fmt.Errorf("volts %q: %w", rec[4], err)
	}
	a, err := powerValue(rec[5])
	if err != nil {
		return nil, fmt.Errorf("amps %q: %w", rec[5], err)
	}
	w.Volts, w.Amps = append(w.Volts, v), append(w.Amps, a)
	if markers {
		m, err := strconv.ParseUint(rec[6], 10, 8)
		if err != nil || strconv.Itoa(int(m)) != rec[6] {
			return nil, fmt.Errorf("markers %q: not an integer 0..255", rec[6])
		}
		w.Markers = append(w.Markers, uint8(m))
	}
	return w, nil
}

func powerValue(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0) || math.IsInf(v, 0) {
		return 0, errors.New("not a finite non-negative number")
	}
	return v, nil
}
