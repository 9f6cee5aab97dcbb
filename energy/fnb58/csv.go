package fnb58

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"pqrepro/energy"
)

// maxLine bounds one CSV line in bytes.
const maxLine = 1024

// csvTolerance is how far a CSV value may lie from the exact one: the export rounds powers to
// eight decimals (5e-9 W) and the header's extremes to ten, so two rounded values of the same
// number differ by less than this.
const csvTolerance = 1e-8

// ReadCSV reads an FNB58 CSV export (see the package documentation) named name in errors: the
// application's own export or a spreadsheet's re-save of it. Every problem is reported with its
// line; a file that ends without a newline is ErrTruncated and a header with another channel
// count is ErrLayout. Times must lie on the rate's grid and the header's extremes must match the
// samples within the export's rounding.
func ReadCSV(r io.Reader, name string) (*Capture, error) {
	cr := &csvReader{br: bufio.NewReaderSize(r, 64<<10), name: name}
	c := &Capture{Trace: energy.Trace{Source: name}}
	sheet, err := cr.readHeader(c)
	if err != nil {
		return nil, err
	}
	meanText, err := cr.readRows(c, sheet)
	if err != nil {
		return nil, err
	}
	if len(c.Power) < 2 {
		return nil, fmt.Errorf("%s: %d samples: a capture needs two or more", name, len(c.Power))
	}
	if err := checkExtremes(c, csvTolerance); err != nil {
		return nil, err
	}
	if meanText != "" {
		c.StatedMean, _ = number(meanText)
		tol := 0.5*math.Pow10(-decimals(meanText)) + 5e-9 + 1e-12
		if m := c.Mean(); math.Abs(m-c.StatedMean) > tol {
			return nil, fmt.Errorf("%s line %d: the mean row says %s W, the rows' mean is %.10g W", name, cr.lineNo-1, meanText, m)
		}
	}
	return c, nil
}

// csvReader reads an export line by line, counting lines for errors.
type csvReader struct {
	br     *bufio.Reader
	name   string
	lineNo int
}

// next returns the next line without its line ending, or io.EOF at a clean end of file.
func (r *csvReader) next() (string, error) {
	r.lineNo++
	line, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxLine {
		return "", fmt.Errorf("%s line %d: longer than %d bytes", r.name, r.lineNo, maxLine)
	}
	if errors.Is(err, io.EOF) {
		if len(line) == 0 {
			return "", io.EOF
		}
		return "", fmt.Errorf("%s line %d: %w: the file ends without a newline (%q)", r.name, r.lineNo, ErrTruncated, line)
	}
	if err != nil {
		return "", fmt.Errorf("%s line %d: %w", r.name, r.lineNo, err)
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r"), nil
}

// header returns the next line, which must exist: the header line named what.
func (r *csvReader) header(what string) (string, error) {
	s, err := r.next()
	if errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s line %d: %w: the file ends before its %s line", r.name, r.lineNo, ErrTruncated, what)
	}
	return s, err
}

// readHeader reads the three header lines into c and reports whether the file is a
// spreadsheet's re-save (every line ending with a comma).
func (r *csvReader) readHeader(c *Capture) (sheet bool, err error) {
	l1, err := r.header("rate")
	if err != nil {
		return false, err
	}
	if err := c.parseRateLine(strings.TrimRight(l1, ",")); err != nil {
		return false, fmt.Errorf("%s line 1: %w", r.name, err)
	}
	l2, err := r.header("extremes")
	if err != nil {
		return false, err
	}
	if err := c.parseExtremesLine(strings.TrimRight(l2, ",")); err != nil {
		return false, fmt.Errorf("%s line 2: %w", r.name, err)
	}
	l3, err := r.header("column")
	if err != nil {
		return false, err
	}
	switch l3 {
	case "Time,Power":
		return false, nil
	case "Time,Power,":
		return true, nil
	}
	return false, fmt.Errorf("%s line 3: columns %q: want \"Time,Power\"", r.name, l3)
}

// readRows reads the sample rows into c, and a spreadsheet's closing mean row, whose text it
// returns ("" when there is none).
func (r *csvReader) readRows(c *Capture, sheet bool) (meanText string, err error) {
	name := r.name
	for {
		s, err := r.next()
		if errors.Is(err, io.EOF) {
			return meanText, nil
		}
		if err != nil {
			return "", err
		}
		if meanText != "" {
			return "", fmt.Errorf("%s line %d: a row after the mean row (line %d)", name, r.lineNo, r.lineNo-1)
		}
		if sheet {
			var ok bool
			if s, ok = strings.CutSuffix(s, ","); !ok {
				return "", fmt.Errorf("%s line %d: %q: the file's columns line ends with a comma, this row does not", name, r.lineNo, s)
			}
		}
		ts, ps, ok := strings.Cut(s, ",")
		if !ok || strings.Contains(ps, ",") {
			return "", fmt.Errorf("%s line %d: %q: want two fields, time and power", name, r.lineNo, s)
		}
		if ts == "" && sheet {
			// The spreadsheet's summary row: the capture's mean.
			if _, err := number(ps); err != nil {
				return "", fmt.Errorf("%s line %d: mean: %w", name, r.lineNo, err)
			}
			meanText = ps
			continue
		}
		if err := r.addRow(c, ts, ps); err != nil {
			return "", err
		}
	}
}

// addRow appends one sample row to c: its time on the rate's grid, its power.
func (r *csvReader) addRow(c *Capture, ts, ps string) error {
	i := len(c.Power)
	if i == energy.MaxSamples {
		return fmt.Errorf("%s line %d: more than the limit of %d samples", r.name, r.lineNo, energy.MaxSamples)
	}
	t, err := number(ts)
	if err != nil {
		return fmt.Errorf("%s line %d: time: %w", r.name, r.lineNo, err)
	}
	p, err := number(ps)
	if err != nil {
		return fmt.Errorf("%s line %d: power: %w", r.name, r.lineNo, err)
	}
	if err := energy.OnGrid(t, i, c.Rate); err != nil {
		return fmt.Errorf("%s line %d: %w", r.name, r.lineNo, err)
	}
	c.Time, c.Power = append(c.Time, t), append(c.Power, p)
	return nil
}

// parseRateLine reads "# 50.0 sps, start/stop: 50/0 mA (5 s), channels: 1".
func (c *Capture) parseRateLine(s string) error {
	rest, ok := strings.CutPrefix(s, "# ")
	rate, rest, ok2 := strings.Cut(rest, " sps, start/stop: ")
	start, rest, ok3 := strings.Cut(rest, "/")
	stop, rest, ok4 := strings.Cut(rest, " mA (")
	secs, rest, ok5 := strings.Cut(rest, " s), channels: ")
	if !(ok && ok2 && ok3 && ok4 && ok5) {
		return fmt.Errorf("%q: want \"# RATE sps, start/stop: A/B mA (S s), channels: N\"", s)
	}
	var err error
	if c.Rate, err = number(rate); err != nil || !(c.Rate > 0 && c.Rate <= energy.MaxRate) {
		return fmt.Errorf("rate %q: want a number of samples per second in (0, %g]", rate, float64(energy.MaxRate))
	}
	for _, f := range []struct {
		name, text string
		v          *int
	}{{"start current", start, &c.StartMA}, {"stop current", stop, &c.StopMA}, {"trigger time", secs, &c.TriggerSeconds}, {"channels", rest, &c.Channels}} {
		n, err := strconv.Atoi(f.text)
		if err != nil || n < 0 || n > 1<<30 {
			return fmt.Errorf("%s %q: want a whole number", f.name, f.text)
		}
		*f.v = n
	}
	if c.Channels != 1 {
		return fmt.Errorf("%w: channels is %d; only single-channel captures are read", ErrLayout, c.Channels)
	}
	return nil
}

// parseExtremesLine reads "# P min: 2.4007591992, P max: 2.7639580533".
func (c *Capture) parseExtremesLine(s string) error {
	rest, ok := strings.CutPrefix(s, "# P min: ")
	lo, hi, ok2 := strings.Cut(rest, ", P max: ")
	if !ok || !ok2 {
		return fmt.Errorf("%w: %q: want \"# P min: W, P max: W\" (a single power channel)", ErrLayout, s)
	}
	var err error
	if c.PMin, err = number(lo); err != nil {
		return fmt.Errorf("field P min: %w", err)
	}
	if c.PMax, err = number(hi); err != nil {
		return fmt.Errorf("field P max: %w", err)
	}
	return nil
}

// number parses a decimal number as the exports write it (digits, one point, an optional sign
// and exponent); hexadecimal, NaN and infinities are refused.
func number(s string) (float64, error) {
	if s == "" || len(s) > 40 || strings.Trim(s, "0123456789.-+eE") != "" {
		return 0, fmt.Errorf("%q is not a decimal number", s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a decimal number", s)
	}
	return v, nil
}

// decimals counts the digits after the point of a plain decimal.
func decimals(s string) int {
	if i := strings.IndexByte(s, '.'); i >= 0 && !strings.ContainsAny(s, "eE") {
		return len(s) - i - 1
	}
	return 0
}
