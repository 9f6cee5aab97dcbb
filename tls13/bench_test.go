package tls13

import (
	"crypto/tls"
	"io"
	"slices"
	"testing"
	"time"
)

// BenchmarkHandshake runs full handshakes (fresh TCP connection each, 32-byte echo) between the
// engine's client and server over loopback for a few cells; it reports the client's measured
// handshake latency and primitive share as extra metrics.
func BenchmarkHandshake(b *testing.B) {
	cells := []struct {
		g Group
		s SignatureScheme
	}{
		{X25519, Ed25519},
		{X25519, RSAPSSRSAESHA256},
		{MLKEM512, MLDSA44},
		{MLKEM768, MLDSA65},
		{MLKEM1024, MLDSA87},
		{X25519MLKEM768, ECDSAP256SHA256},
	}
	for _, cell := range cells {
		b.Run(cell.g.String()+"+"+cell.s.String(), func(b *testing.B) {
			ccfg, scfg := clientConfig(b, cell.s, cell.g), serverConfig(b, cell.s, cell.g)
			msg := make([]byte, 32)
			buf := make([]byte, 32)
			var hs, prim, wait int64
			for b.Loop() {
				cc, sc := tcpPair(b)
				server := Server(sc, scfg)
				done := make(chan error, 1)
				go func() {
					sbuf := make([]byte, 32)
					if _, err := io.ReadFull(server, sbuf); err != nil {
						done <- err
						return
					}
					_, err := server.Write(sbuf)
					done <- err
				}()
				client := Client(cc, ccfg)
				if _, err := client.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(client, buf); err != nil {
					b.Fatal(err)
				}
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				st := client.Stats()
				hs += int64(st.Handshake)
				prim += int64(st.Primitive)
				wait += int64(st.Wait)
				cc.Close()
				sc.Close()
			}
			n := float64(b.N)
			b.ReportMetric(float64(hs)/n/1e3, "hs-µs")
			b.ReportMetric(float64(prim)/n/1e3, "client-prim-µs")
			b.ReportMetric(float64(wait)/n/1e3, "client-wait-µs")
		})
	}
}

// BenchmarkHandshakeCryptoTLS is the same loop with Go's crypto/tls on both sides, for
// comparison with BenchmarkHandshake on the cells both support.
func BenchmarkHandshakeCryptoTLS(b *testing.B) {
	cells := []struct {
		g Group
		s SignatureScheme
	}{
		{X25519, Ed25519},
		{X25519, RSAPSSRSAESHA256},
		{MLKEM1024, MLDSA87},
		{X25519MLKEM768, ECDSAP256SHA256},
	}
	for _, cell := range cells {
		b.Run(cell.g.String()+"+"+cell.s.String(), func(b *testing.B) {
			ch := chainFor(b, cell.s)
			scfg := &tls.Config{MinVersion: tls.VersionTLS13, CurvePreferences: []tls.CurveID{tls.CurveID(cell.g)},
				Certificates:           []tls.Certificate{{Certificate: [][]byte{ch.leafDER}, PrivateKey: ch.key}},
				SessionTicketsDisabled: true}
			ccfg := &tls.Config{MinVersion: tls.VersionTLS13, CurvePreferences: []tls.CurveID{tls.CurveID(cell.g)},
				RootCAs: ch.pool, ServerName: testHost}
			msg := make([]byte, 32)
			buf := make([]byte, 32)
			for b.Loop() {
				cc, sc := tcpPair(b)
				server := tls.Server(sc, scfg)
				done := make(chan error, 1)
				go func() {
					sbuf := make([]byte, 32)
					if _, err := io.ReadFull(server, sbuf); err != nil {
						done <- err
						return
					}
					_, err := server.Write(sbuf)
					done <- err
				}()
				client := tls.Client(cc, ccfg)
				if _, err := client.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(client, buf); err != nil {
					b.Fatal(err)
				}
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				cc.Close()
				sc.Close()
			}
		})
	}
}

// BenchmarkVersusCryptoTLS alternates one engine handshake and one crypto/tls handshake (both
// sides the same stack, fresh loopback connection, 32-byte echo) per iteration, so load on the
// machine hits both alike, and reports each stack's median and their ratio.
func BenchmarkVersusCryptoTLS(b *testing.B) {
	cells := []struct {
		g Group
		s SignatureScheme
	}{
		{X25519, Ed25519},
		{MLKEM1024, MLDSA65},
		{X25519MLKEM768, ECDSAP256SHA256},
		{P256, RSAPSSRSAESHA256},
	}
	for _, cell := range cells {
		b.Run(cell.g.String()+"+"+cell.s.String(), func(b *testing.B) {
			ch := chainFor(b, cell.s)
			eccfg, escfg := clientConfig(b, cell.s, cell.g), serverConfig(b, cell.s, cell.g)
			tscfg := &tls.Config{MinVersion: tls.VersionTLS13, CurvePreferences: []tls.CurveID{tls.CurveID(cell.g)},
				Certificates:           []tls.Certificate{{Certificate: [][]byte{ch.leafDER}, PrivateKey: ch.key}},
				SessionTicketsDisabled: true}
			tccfg := &tls.Config{MinVersion: tls.VersionTLS13, CurvePreferences: []tls.CurveID{tls.CurveID(cell.g)},
				RootCAs: ch.pool, ServerName: testHost}
			echo := func(client, server io.ReadWriter) time.Duration {
				done := make(chan error, 1)
				go func() {
					buf := make([]byte, 32)
					if _, err := io.ReadFull(server, buf); err != nil {
						done <- err
						return
					}
					_, err := server.Write(buf)
					done <- err
				}()
				buf := make([]byte, 32)
				t0 := time.Now()
				if _, err := client.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(client, buf); err != nil {
					b.Fatal(err)
				}
				d := time.Since(t0)
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				return d
			}
			var eng, ctls []time.Duration
			for b.Loop() {
				cc, sc := tcpPair(b)
				eng = append(eng, echo(Client(cc, eccfg), Server(sc, escfg)))
				cc.Close()
				sc.Close()
				cc, sc = tcpPair(b)
				ctls = append(ctls, echo(tls.Client(cc, tccfg), tls.Server(sc, tscfg)))
				cc.Close()
				sc.Close()
			}
			me, mc := median(eng), median(ctls)
			b.ReportMetric(float64(me)/1e3, "engine-µs")
			b.ReportMetric(float64(mc)/1e3, "cryptotls-µs")
			b.ReportMetric(float64(me)/float64(mc), "ratio")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
