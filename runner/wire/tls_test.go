package wire_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"pqrepro/runner/wire"
	"pqrepro/runner/wire/wiretest"
)

// startBoard connects a Conn to a scripted board over two real pipes.
func startBoard(t *testing.T, b *wiretest.Board) *wire.Conn {
	t.Helper()
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	go func() { b.Serve(reqR, respW); respW.Close() }()
	c := wire.NewConn(struct {
		io.Reader
		io.Writer
	}{respR, reqW}, wire.Options{RetryInterval: 200 * time.Millisecond, SilenceTimeout: 5 * time.Second})
	t.Cleanup(func() { reqW.Close(); respR.Close(); c.Close() })
	return c
}

func field(k, v string) wire.Field { return wire.Field{Key: k, Value: v} }

// handshakes answers a TLS request with the frames made by report, one per timed handshake.
func handshakes(report func(req wire.Frame, i int) []wire.Field, done func(n int) []wire.Field) wiretest.Handler {
	return func(req wire.Frame, send func(string, ...wire.Field) error) error {
		if req.Type != "TLS" {
			return send("ERROR", field("code", "unknown"))
		}
		n, _ := req.Uint("n")
		if err := send("TLS", req.Fields...); err != nil {
			return err
		}
		for i := 0; i < int(n); i++ {
			if err := send("HANDSHAKE", report(req, i)...); err != nil {
				return err
			}
		}
		return send("TLSDONE", done(int(n))...)
	}
}

func okReport(req wire.Frame, i int) []wire.Field {
	g, _ := req.Get("group")
	s, _ := req.Get("sig")
	return []wire.Field{field("i", strconv.Itoa(i)), field("us", strconv.Itoa(180000+i)), field("heap", "41200"),
		field("group", g), field("sig", s), field("ok", "1")}
}

func allOK(n int) []wire.Field {
	return []wire.Field{field("n", strconv.Itoa(n)), field("ok", strconv.Itoa(n)), field("fail", "0")}
}

var tlsReq = wire.TLSRequest{Host: "192.168.4.2", Port: 4433, Group: 512, Sig: 0x0904, SNI: "pqrepro.test",
	CA: make([]byte, 16), Iterations: 3, Echo: 32}

func TestTLSExchange(t *testing.T) {
	b := &wiretest.Board{Hello: []wire.Field{field("board", "pico-w"), field("tls_groups", "512,513,29"), field("tls_sigs", "2308,2055")},
		Handler: handshakes(okReport, allOK)}
	c := startBoard(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	groups, sigs, err := h.TLSGroups()
	if err != nil || len(groups) != 3 || groups[0] != 512 || len(sigs) != 2 || sigs[0] != 0x0904 {
		t.Fatalf("TLSGroups = %v %v %v", groups, sigs, err)
	}
	var got []wire.Handshake
	sum, err := c.TLS(ctx, tlsReq, func(hs wire.Handshake) { got = append(got, hs) })
	if err != nil {
		t.Fatal(err)
	}
	if sum.N != 3 || sum.OK != 3 || len(got) != 3 {
		t.Fatalf("summary %+v, %d reports", sum, len(got))
	}
	for i, hs := range got {
		if !hs.OK || hs.Index != i || hs.Micros != uint64(180000+i) || hs.Heap != 41200 || hs.Group != 512 || hs.Sig != 0x0904 {
			t.Fatalf("report %d = %+v", i, hs)
		}
	}
}

func TestTLSBadAnswers(t *testing.T) {
	tests := []struct {
		name   string
		report func(wire.Frame, int) []wire.Field
		done   func(int) []wire.Field
		err    error  // the exchange fails with this
		failed string // or a report comes back failed with this reason prefix
	}{
		{name: "other group negotiated", report: func(req wire.Frame, i int) []wire.Field {
			f := okReport(req, i)
			f[3] = field("group", "29")
			return f
		}, done: allOK, failed: "negotiated group 29"},
		{name: "out of order", report: func(req wire.Frame, i int) []wire.Field {
			f := okReport(req, i)
			f[0] = field("i", strconv.Itoa(2-i))
			return f
		}, done: allOK, err: wire.ErrProtocol},
		{name: "ok without time", report: func(req wire.Frame, i int) []wire.Field {
			return []wire.Field{field("i", strconv.Itoa(i)), field("group", "512"), field("sig", "2308"), field("ok", "1")}
		}, done: allOK, err: wire.ErrProtocol},
		{name: "failure without reason", report: func(req wire.Frame, i int) []wire.Field {
			return []wire.Field{field("i", strconv.Itoa(i)), field("ok", "0")}
		}, done: allOK, err: wire.ErrProtocol},
		{name: "tally disagrees", report: okReport, done: func(n int) []wire.Field {
			return []wire.Field{field("n", strconv.Itoa(n+1)), field("ok", strconv.Itoa(n+1)), field("fail", "0")}
		}, err: wire.ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startBoard(t, &wiretest.Board{Handler: handshakes(tt.report, tt.done)})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := c.Hello(ctx); err != nil {
				t.Fatal(err)
			}
			var got []wire.Handshake
			_, err := c.TLS(ctx, tlsReq, func(hs wire.Handshake) { got = append(got, hs) })
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, hs := range got {
				if hs.OK || !strings.HasPrefix(hs.Reason, tt.failed) {
					t.Fatalf("report %+v, want failed with %q", hs, tt.failed)
				}
			}
		})
	}
}

func TestTLSUnsupported(t *testing.T) {
	c := startBoard(t, &wiretest.Board{}) // firmware without a TLS client
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, s, err := h.TLSGroups(); err != nil || g != nil || s != nil {
		t.Fatalf("TLSGroups = %v %v %v", g, s, err)
	}
	_, err = c.TLS(ctx, tlsReq, nil)
	var de *wire.DeviceError
	if !errors.As(err, &de) || de.Code != "unknown" {
		t.Fatalf("err = %v, want firmware error unknown", err)
	}
}

func TestTLSRequestValidate(t *testing.T) {
	bad := []func(*wire.TLSRequest){
		func(r *wire.TLSRequest) { r.Host = "::1" },
		func(r *wire.TLSRequest) { r.Host = "" },
		func(r *wire.TLSRequest) { r.Port = 0 },
		func(r *wire.TLSRequest) { r.Group = 0 },
		func(r *wire.TLSRequest) { r.SNI = "a b" },
		func(r *wire.TLSRequest) { r.CA = r.CA[:8] },
		func(r *wire.TLSRequest) { r.Iterations = wire.MaxTLSHandshakes + 1 },
		func(r *wire.TLSRequest) { r.Warmup = -1 },
		func(r *wire.TLSRequest) { r.Echo = wire.MaxTLSEcho + 1 },
	}
	if err := tlsReq.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, f := range bad {
		r := tlsReq
		r.CA = append([]byte(nil), tlsReq.CA...)
		f(&r)
		if err := r.Validate(); err == nil {
			t.Errorf("case %d: Validate accepted %+v", i, r)
		}
	}
}
