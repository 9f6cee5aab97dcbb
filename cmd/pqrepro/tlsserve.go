package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/runner/exec/tlsmatrix"
	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// tlsCADir is where the board CAs live: --ca-dir, then PQREPRO_TLS_CA, then the user's
// configuration directory.
func tlsCADir(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := os.Getenv("PQREPRO_TLS_CA"); v != "" {
		return v
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "pqrepro", "tls-ca")
	}
	return filepath.Join(".pqrepro", "tls-ca")
}

// cmdTLSServe runs pqrepro's engine as the TLS server of one matrix cell for a board's client
// (a Pico W or ESP32 on the lab's network) and prints the server's side of every handshake.
func cmdTLSServe(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("tls-serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	group := fs.String("group", "", "key-exchange group ("+strings.Join(tlsGroupNames(), ", ")+")")
	sig := fs.String("sig", "", "signature scheme ("+strings.Join(tlsSigNames(), ", ")+")")
	listen := fs.String("listen", "127.0.0.1:4433", "address to listen on (host:port; port 0 picks one)")
	name := fs.String("name", "pqrepro.test", "server name in the leaf certificate (the board checks it)")
	caDir := fs.String("ca-dir", "", "folder of the per-scheme CAs boards pin (default: $PQREPRO_TLS_CA, else the user's config folder)")
	suite := fs.String("suite", "TLS_AES_128_GCM_SHA256", "cipher suite ("+strings.Join(artifacts.TLSCipherSuites(), ", ")+")")
	echo := fs.Int("echo", 32, "bytes the client sends after the handshake and reads back")
	n := fs.Int("n", 0, "stop after this many connections (0: serve until interrupted)")
	connTimeout := fs.Duration("conn-timeout", 30*time.Second, "longest one connection may take, handshake and echo (a client silent longer is dropped)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	switch {
	case !slices.Contains(tlsGroupNames(), *group):
		return usageError{fmt.Sprintf("--group %q: want one of %s", *group, strings.Join(tlsGroupNames(), ", "))}
	case !slices.Contains(tlsSigNames(), *sig):
		return usageError{fmt.Sprintf("--sig %q: want one of %s", *sig, strings.Join(tlsSigNames(), ", "))}
	case !slices.Contains(artifacts.TLSCipherSuites(), *suite):
		return usageError{fmt.Sprintf("--suite %q: want one of %s", *suite, strings.Join(artifacts.TLSCipherSuites(), ", "))}
	case *echo < 0 || *echo > artifacts.MaxTLSEcho:
		return usageError{fmt.Sprintf("--echo %d: want 0..%d", *echo, artifacts.MaxTLSEcho)}
	case *n < 0:
		return usageError{"--n must not be negative"}
	case *connTimeout <= 0:
		return usageError{"--conn-timeout must be positive"}
	}
	scheme, err := tls13.ParseSignatureScheme(*sig)
	if err != nil {
		return err
	}
	dir := tlsCADir(*caDir)
	ca, err := tlscert.LoadOrCreateCA(dir, scheme, time.Now())
	if err != nil {
		return err
	}
	chain, err := ca.Issue(*name, time.Now())
	if err != nil {
		return err
	}
	// Concurrent: one idle socket or a board that resets mid-handshake delays no other client.
	srv, err := tlsmatrix.StartTLSBoardServerWith(*listen, tlsmatrix.TLSBoardCell{Group: *group, Scheme: *sig, Suite: *suite, Echo: *echo}, chain,
		tlsmatrix.TLSBoardOptions{Concurrent: true, ConnTimeout: *connTimeout})
	if err != nil {
		return err
	}
	defer srv.Close()
	caFile, _ := tlscert.CAFiles(dir, scheme)
	fmt.Fprintf(stdout, "CA (%s): %s, fingerprint %x (the board pins it; TLS ca=)\n", *sig, caFile, ca.Fingerprint())
	fmt.Fprintf(stdout, "serving %s+%s (%s) as %s on %s; each client sends %d bytes and reads them back\n", *group, *sig, *suite, *name, srv.Addr(), *echo)
	var hs []float64
	for i := 1; *n == 0 || i <= *n; i++ {
		r, err := srv.Next(ctx)
		if errors.Is(err, context.Canceled) || errors.Is(err, tlsmatrix.ErrServerClosed) {
			break
		}
		if err != nil {
			return err
		}
		if r.Err == "" && (r.Group != *group || r.Scheme != *sig) {
			r.Err = fmt.Sprintf("negotiated %s+%s", r.Group, r.Scheme)
		}
		if r.Err != "" {
			fmt.Fprintf(stdout, "%d failed (%s): %s\n", i, r.Remote, r.Err)
			continue
		}
		us := func(k string) string { return fmt.Sprintf("%.0f µs", r.Phases[k]/1e3) }
		fmt.Fprintf(stdout, "%d ok (%s): handshake %s (encapsulate %s, sign %s, wait %s), bytes in %d out %d, %d flights\n",
			i, r.Remote, us("handshake"), us("encapsulate"), us("sign"), us("wait"), r.Received, r.Sent, r.Flights)
		hs = append(hs, r.Phases["handshake"])
	}
	if len(hs) > 0 {
		st := artifacts.Summarize(hs)
		fmt.Fprintf(stdout, "served %d handshakes: server-side median %.0f µs (p25 %.0f, p75 %.0f)\n", st.N, st.Median/1e3, st.P25/1e3, st.P75/1e3)
	}
	return nil
}

func tlsGroupNames() []string {
	var out []string
	for _, g := range artifacts.TLSGroups() {
		out = append(out, g.Name)
	}
	return out
}

func tlsSigNames() []string {
	var out []string
	for _, s := range artifacts.TLSSignatures() {
		out = append(out, s.Name)
	}
	return out
}
