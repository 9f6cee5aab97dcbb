package fnb58

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/internal/shareddata"
)

// powerReadings is the paper's raw power folder in the shared reference data.
func powerReadings(t testing.TB) string {
	return shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings")
}

// TestCFNMatchesCSV decodes every .cfn capture the paper's authors published and checks it
// against their CSV export of it: the same header fields, the same number of samples, every
// time and power within the CSV's eight-decimal rounding (5e-9).
func TestCFNMatchesCSV(t *testing.T) {
	dir := powerReadings(t)
	cfns, err := filepath.Glob(filepath.Join(dir, "*", "cfn_files", "*.cfn"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfns) != 371 {
		t.Fatalf("%d .cfn files in %s, want 371 (7 boards x 53 captures)", len(cfns), dir)
	}
	var worstP, worstT float64
	samples := 0
	for _, f := range cfns {
		csvPath := strings.TrimSuffix(strings.Replace(f, "cfn_files", "csv_files", 1), ".cfn") + ".csv"
		a := readFile(t, f, ReadCFN)
		b := readFile(t, csvPath, ReadCSV)
		if a.Rate != b.Rate || a.StartMA != b.StartMA || a.StopMA != b.StopMA || a.TriggerSeconds != b.TriggerSeconds || a.Channels != b.Channels {
			t.Errorf("%s: header %v/%d/%d/%d/%d, CSV %v/%d/%d/%d/%d", f, a.Rate, a.StartMA, a.StopMA, a.TriggerSeconds, a.Channels,
				b.Rate, b.StartMA, b.StopMA, b.TriggerSeconds, b.Channels)
		}
		if math.Abs(a.PMin-b.PMin) > 5e-11 || math.Abs(a.PMax-b.PMax) > 5e-11 {
			t.Errorf("%s: extremes %.12g..%.12g, CSV header %.12g..%.12g", f, a.PMin, a.PMax, b.PMin, b.PMax)
		}
		if len(a.Power) != len(b.Power) {
			t.Errorf("%s: %d samples, its CSV %d", f, len(a.Power), len(b.Power))
			continue
		}
		for i := range a.Power {
			worstP = max(worstP, math.Abs(a.Power[i]-b.Power[i]))
			worstT = max(worstT, math.Abs(a.Time[i]-b.Time[i]))
		}
		samples += len(a.Power)
	}
	if worstP > 5e-9 || worstT > 5e-9 {
		t.Errorf("largest difference from the CSVs: %.3g W, %.3g s; want at most 5e-9", worstP, worstT)
	}
	t.Logf("%d pairs, %d samples: largest difference %.3g W, %.3g s", len(cfns), samples, worstP, worstT)
}

// TestCaptureMeans checks every CSV's mean against the authors' per-capture averages
// (power_readings/<pi>_results.csv), which their energies were computed from.
func TestCaptureMeans(t *testing.T) {
	dir := powerReadings(t)
	results, _ := filepath.Glob(filepath.Join(dir, "*_results.csv"))
	if len(results) != 7 {
		t.Fatalf("%d result files, want 7", len(results))
	}
	n := 0
	for _, f := range results {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		board := strings.TrimSuffix(filepath.Base(f), "_results.csv")
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
			name, v, _ := strings.Cut(strings.TrimSpace(line), ",")
			want, err := number(v)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			c := readFile(t, filepath.Join(dir, board, "csv_files", name), ReadCSV)
			// The authors' means are full float64 averages except one written with nine
			// decimals (pi1's 42_…shake-128s verify).
			tol := max(1e-12, 0.5*math.Pow10(-decimals(v)))
			if got := c.Mean(); math.Abs(got-want) > tol {
				t.Errorf("%s/%s: mean %.17g W, the authors' %s", board, name, got, v)
			}
			n++
		}
	}
	if n != 371 {
		t.Errorf("%d means checked, want 371", n)
	}
}

func readFile(t *testing.T, path string, read func(io.Reader, string) (*Capture, error)) *Capture {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := read(f, filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cfnBytes builds a .cfn file of n samples at 50 sps, powers 1 + i/1000.
func cfnBytes(n int) []byte {
	le := binary.LittleEndian
	b := make([]byte, cfnHeader, cfnHeader+16*n)
	le.PutUint64(b[0:], math.Float64bits(50))
	le.PutUint32(b[8:], 50)
	le.PutUint32(b[16:], 5)
	le.PutUint16(b[20:], 1)
	le.PutUint16(b[22:], 4)
	copy(b[24:], channelBytes[:])
	le.PutUint64(b[29:], math.Float64bits(1+float64(n-1)/1000))
	le.PutUint64(b[37:], math.Float64bits(1))
	le.PutUint32(b[45:], uint32(n))
	for i := range n {
		b = le.AppendUint64(b, math.Float64bits(float64(i)/50))
		b = le.AppendUint64(b, math.Float64bits(1+float64(i)/1000))
	}
	return b
}

const goodCSV = "# 50.0 sps, start/stop: 50/0 mA (5 s), channels: 1\n# P min: 1.0000000000, P max: 1.0030000000\nTime,Power\n" +
	"0.00000000,1.00000000\n0.02000000,1.00100000\n0.04000000,1.00200000\n0.06000000,1.00300000\n"

const sheetCSV = "# 50.0 sps, start/stop: 50/0 mA (360 s), channels: 1\n# P min: 1, P max: 1.003,\nTime,Power,\n" +
	"0,1,\n0.02,1.001,\n0.04,1.002,\n0.06,1.003,\n,1.0015,\n"

func TestReadCFN(t *testing.T) {
	set := func(off int, v ...byte) []byte { b := cfnBytes(4); copy(b[off:], v); return b }
	tests := []struct {
		name string
		in   []byte
		want string
		is   error
	}{
		{"good", cfnBytes(4), "", nil},
		{"empty", nil, "0 of the header's 49 bytes", ErrTruncated},
		{"short header", cfnBytes(4)[:30], "30 of the header's 49 bytes", ErrTruncated},
		{"short samples", cfnBytes(4)[:cfnHeader+16*3+5], "3 of the 4 samples", ErrTruncated},
		{"trailing byte", append(cfnBytes(4), 0), "bytes after the last of the 4 samples", nil},
		{"two channels", set(20, 2, 0), "channels (byte 20) is 2", ErrLayout},
		{"other quantity", set(22, 3, 0), "quantity (byte 22) is 3", ErrLayout},
		{"other channel bytes", set(24, 0xff, 0x00), "channel bytes (bytes 24-28)", ErrLayout},
		{"zero rate", set(0, 0, 0, 0, 0, 0, 0, 0, 0), "rate (byte 0) 0", nil},
		{"nan rate", set(0, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f), "rate (byte 0) NaN", nil},
		{"huge count", set(45, 0xff, 0xff, 0xff, 0xff), "count (byte 45) is 4294967295", nil},
		{"one sample", set(45, 1, 0, 0, 0), "count (byte 45) is 1", nil},
		{"wrong max", set(29, 0, 0, 0, 0, 0, 0, 0, 0x40), "P max 2 W in the header", nil},
		{"gap in time", set(cfnHeader+16*2, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f), "sample 2 (byte 81): time 1 s, want 0.04 s", nil},
		{"nan power", set(cfnHeader+8, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f), "sample 0 (byte 57): power NaN", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ReadCFN(bytes.NewReader(tt.in), "x.cfn")
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(c.Power) != 4 || c.Power[3] != 1.003 || c.Time[3] != 0.06 || c.Rate != 50 || c.TriggerSeconds != 5 {
					t.Fatalf("decoded %+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "x.cfn: ") {
				t.Fatalf("error %v, want one naming x.cfn and %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("error %v is not %v", err, tt.is)
			}
		})
	}
}

func TestReadCSV(t *testing.T) {
	rep := func(s, old, new string) string { return strings.Replace(s, old, new, 1) }
	tests := []struct {
		name, in, want string
		is             error
	}{
		{"export", goodCSV, "", nil},
		{"crlf", strings.ReplaceAll(goodCSV, "\n", "\r\n"), "", nil},
		{"spreadsheet", sheetCSV, "", nil},
		{"empty", "", "line 1: truncated: the file ends before its rate line", ErrTruncated},
		{"no newline at the end", strings.TrimSuffix(goodCSV, "\n"), "line 7: truncated: the file ends without a newline", ErrTruncated},
		{"header only", "# 50.0 sps, start/stop: 50/0 mA (5 s), channels: 1\n", "line 2: truncated", ErrTruncated},
		{"two channels", rep(goodCSV, "channels: 1", "channels: 2"), "line 1: unsupported layout: channels is 2", ErrLayout},
		{"two quantities", rep(goodCSV, "# P min", "# I min"), "line 2: unsupported layout", ErrLayout},
		{"other columns", rep(goodCSV, "Time,Power", "Time,Current"), "line 3: columns \"Time,Current\"", nil},
		{"foreign file", "id,name\n1,a\n", "line 1: \"id,name\"", nil},
		{"bad rate", rep(goodCSV, "50.0 sps", "fast sps"), "line 1: rate \"fast\"", nil},
		{"bad trigger", rep(goodCSV, "(5 s)", "(x s)"), "line 1: trigger time \"x\"", nil},
		{"third field", rep(goodCSV, "0.02000000,1.00100000", "0.02000000,1.00100000,7"), "line 5: \"0.02000000,1.00100000,7\": want two fields", nil},
		{"bad power", rep(goodCSV, "1.00100000", "0x1p0"), "line 5: power: \"0x1p0\" is not a decimal number", nil},
		{"nan power", rep(goodCSV, "1.00100000", "NaN"), "line 5: power: \"NaN\"", nil},
		{"gap", rep(goodCSV, "0.04000000,", "0.40000000,"), "line 6: time 0.4 s, want 0.04 s", nil},
		{"wrong extreme", rep(goodCSV, "P max: 1.0030000000", "P max: 1.0040000000"), "P max 1.004 W in the header, the largest sample is 1.003 W", nil},
		{"one sample", "# 50.0 sps, start/stop: 50/0 mA (5 s), channels: 1\n# P min: 1, P max: 1\nTime,Power\n0,1\n", "1 samples", nil},
		{"mean row in an export", rep(goodCSV, "0.06000000,1.00300000\n", "0.06000000,1.00300000\n,1.0015\n"), "line 8: time: \"\"", nil},
		{"wrong mean", rep(sheetCSV, ",1.0015,", ",1.0016,"), "line 8: the mean row says 1.0016 W", nil},
		{"row after the mean", sheetCSV + "0.08,1.004,\n", "line 9: a row after the mean row", nil},
		{"row without its comma", rep(sheetCSV, "0.02,1.001,", "0.02,1.001"), "line 5: \"0.02,1.001\": the file's columns line ends with a comma", nil},
		{"long line", rep(goodCSV, "0.02000000,", "0.02000000"+strings.Repeat("0", 2000)+","), "line 5: longer than 1024 bytes", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ReadCSV(strings.NewReader(tt.in), "x.csv")
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(c.Power) != 4 || c.Power[3] != 1.003 || c.Time[2] != 0.04 || c.Rate != 50 {
					t.Fatalf("decoded %+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "x.csv") {
				t.Fatalf("error %v, want one naming x.csv and %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("error %v is not %v", err, tt.is)
			}
		})
	}
}

// FuzzReadCFN: any input is decoded or refused with an error, never a panic, and a decoded
// capture is one a trace can be estimated from.
func FuzzReadCFN(f *testing.F) {
	f.Add(cfnBytes(4))
	f.Add(cfnBytes(2))
	f.Add(cfnBytes(4)[:40])
	f.Add(append(cfnBytes(3), 1, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ReadCFN(bytes.NewReader(b), "fuzz.cfn")
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded a capture that does not validate: %v", err)
		}
		if len(b) != cfnHeader+16*len(c.Power) {
			t.Fatalf("%d bytes decoded as %d samples", len(b), len(c.Power))
		}
	})
}

// FuzzReadCSV: any input is decoded or refused with an error, never a panic, and a decoded
// capture is one a trace can be estimated from.
func FuzzReadCSV(f *testing.F) {
	f.Add(goodCSV)
	f.Add(sheetCSV)
	f.Add(strings.ReplaceAll(goodCSV, "\n", "\r\n"))
	f.Add("# 50.0 sps, start/stop: 50/0 mA (5 s), channels: 1\n# P min: 1, P max: 1\nTime,Power\n0,1\n0.02,1\n")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ReadCSV(strings.NewReader(s), "fuzz.csv")
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded a capture that does not validate: %v", err)
		}
	})
}
