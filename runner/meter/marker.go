package meter

import "time"

// Span is a stretch of a recorded window during which one marker input was high: a board
// raises a GPIO wired to the meter's logic port around an operation, so the window marks the
// operation in the samples themselves.
type Span struct {
	// From and To are the samples marked: From..To-1.
	From, To int
	// Start and End are the times of sample From and of sample To (the first unmarked one, or
	// one period past the window's last sample).
	Start, End time.Duration
	// Cut is true when the span runs into the window's first or last sample, so its true
	// start or end lies outside the window.
	Cut bool
}

// Marked returns the spans of a window during which marker input was high, in order. A
// sample's marker is high when the input was high at any moment the sample covers (a driver
// that averages several readings into one sample ORs their inputs), so a span can be up to a
// sample longer at each end than the marked operation. rate is the window's samples per second.
func Marked(samples []Sample, input uint, rate float64) []Span {
	if input >= 8 || len(samples) == 0 {
		return nil
	}
	period := time.Duration(float64(time.Second) / rate)
	var out []Span
	from := -1
	for i, s := range samples {
		high := s.Markers&(1<<input) != 0
		switch {
		case high && from < 0:
			from = i
		case !high && from >= 0:
			out = append(out, Span{From: from, To: i, Start: samples[from].T, End: s.T, Cut: from == 0})
			from = -1
		}
	}
	if from >= 0 {
		last := samples[len(samples)-1].T + period
		out = append(out, Span{From: from, To: len(samples), Start: samples[from].T, End: last, Cut: true})
	}
	return out
}
