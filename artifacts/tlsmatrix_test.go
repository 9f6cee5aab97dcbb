package artifacts

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

const tlsManifest = `apiVersion: pqrepro/v1
kind: tls-matrix
metadata: {paper: paper000, name: matrix}
spec:
  tls:
    groups: [ML-KEM-512, X25519]
    signatures: [ML-DSA-44, Ed25519]
    stacks: [pqrepro, crypto/tls]
    batch: 2
  iterations: 5
  seed: test
`

func TestTLSManifestDefaultsAndCells(t *testing.T) {
	m, err := ParseManifest([]byte(tlsManifest), "test")
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec.Method != MethodLoopbackTCP || m.Spec.TLS.CipherSuite != "TLS_AES_128_GCM_SHA256" || m.Spec.TLS.Echo != 32 {
		t.Fatalf("defaults: method %s, suite %s, echo %d", m.Spec.Method, m.Spec.TLS.CipherSuite, m.Spec.TLS.Echo)
	}
	cells := m.Cells()
	want := []string{"ML-KEM-512+ML-DSA-44", "ML-KEM-512+Ed25519", "X25519+ML-DSA-44", "X25519+Ed25519"}
	if len(cells) != len(want) {
		t.Fatalf("cells %v", cells)
	}
	for i, c := range cells {
		if c.Algorithm != want[i] || c.Operation != OpHandshake {
			t.Fatalf("cells[%d] = %v, want %s handshake", i, c, want[i])
		}
	}
	// manifest.yaml as a bundle writes it must read back to the same identity.
	back, err := ParseManifest(m.YAML(), "round trip")
	if err != nil {
		t.Fatal(err)
	}
	if back.ID() != m.ID() {
		t.Fatalf("identity changes through manifest.yaml:\n%s\n%s", m.Canonical(), back.Canonical())
	}
}

func TestTLSManifestBad(t *testing.T) {
	tests := []struct {
		name, from, to string
		line           int
		field, msg     string
	}{
		{"unknown group", "[ML-KEM-512, X25519]", "[ML-KEM-512, X448]", 6, "spec.tls.groups[1]", "unknown group \"X448\" (valid: ML-KEM-512, ML-KEM-768"},
		{"duplicate group", "[ML-KEM-512, X25519]", "[X25519, X25519]", 6, "spec.tls.groups[1]", "listed twice"},
		{"unknown scheme", "[ML-DSA-44, Ed25519]", "[ML-DSA-44, Ed448]", 7, "spec.tls.signatures[1]", "unknown signature \"Ed448\" (valid: ML-DSA-44"},
		{"unknown stack", "[pqrepro, crypto/tls]", "[pqrepro, openssl]", 8, "spec.tls.stacks[1]", "valid: pqrepro, crypto/tls"},
		{"engine not first", "[pqrepro, crypto/tls]", "[crypto/tls]", 8, "spec.tls.stacks[0]", "must be pqrepro"},
		{"batch zero", "batch: 2", "batch: -1", 9, "spec.tls.batch", "between 1 and"},
		{"batch over iterations", "batch: 2", "batch: 6", 9, "spec.tls.batch", "more than the 5 iterations"},
		{"echo", "batch: 2", "batch: 2\n    echo: 20000", 10, "spec.tls.echo", "between 1 and 16384"},
		{"role", "batch: 2", "batch: 2\n    role: peer", 10, "spec.tls.role", "unknown role \"peer\" (valid: client, server; the default is client)"},
		{"role server with crypto/tls", "batch: 2", "batch: 2\n    role: server", 8, "spec.tls.stacks[1]", "crypto/tls with role server"},
		{"role server with an outside server", "batch: 2", "batch: 2\n    role: server\n    server: 127.0.0.1:4433", 11, "spec.tls.server", "an outside server belongs to the client role"},
		{"suite", "batch: 2", "batch: 2\n    cipherSuite: TLS_RSA_WITH_RC4", 10, "spec.tls.cipherSuite", "unknown cipher suite"},
		{"iterations", "iterations: 5", "iterations: 1000000", 10, "spec.iterations", "between 1 and 100000"},
		{"algorithms", "  seed: test", "  seed: test\n  algorithms: [ML-KEM-512]", 12, "spec.algorithms", "spec.tls.groups"},
		{"method", "  seed: test", "  seed: test\n  method: in-process", 12, "spec.method", "cannot be timed with in-process (valid: loopback-tcp)"},
		{"no tls", "  tls:", "  tlsx:", 5, "spec.tlsx", "unknown field"},
		{"unknown tls field", "    batch: 2", "    batch: 2\n    resume: true", 10, "spec.tls.resume", "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(tlsManifest, tt.from, tt.to, 1)
			_, err := ParseManifest([]byte(src), "m.yaml")
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("accepted or wrong error: %v", err)
			}
			for _, p := range me.Problems {
				if p.Field == tt.field && p.Line == tt.line && strings.Contains(p.Msg, tt.msg) {
					return
				}
			}
			t.Fatalf("no problem with field %s line %d containing %q in:\n%v", tt.field, tt.line, tt.msg, err)
		})
	}
	// A tls section on another kind is refused.
	_, err := ParseManifest([]byte(strings.Replace(rederiveManifest, "  iterations: 10", "  iterations: 10\n  tls: {groups: [X25519]}", 1)), "m.yaml")
	if err == nil || !strings.Contains(err.Error(), "spec.tls: only a tls-matrix") {
		t.Fatalf("tls section on sig-bench: %v", err)
	}
}

// tlsFixture is a consistent tls-matrix result with its samples.csv and tls.csv (test input,
// not a measurement).
func tlsFixture(t *testing.T) (*Manifest, *Result, *Bundle) {
	t.Helper()
	return tlsFixtureOf(t, tlsManifest)
}

// tlsFixtureOf is tlsFixture of another manifest; with spec.tls.server HOST:PORT its cells
// record a peer and no server CPU.
func tlsFixtureOf(t *testing.T, src string) (*Manifest, *Result, *Bundle) {
	t.Helper()
	m, err := ParseManifest([]byte(src), "test")
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Schema: ResultSchema, Experiment: m.Ref(), ManifestID: m.ID(), Kind: m.Kind, Method: m.Spec.Method, Board: "host", Assurance: AssuranceHost}
	var samples, tlsCSV bytes.Buffer
	sw, tw := csv.NewWriter(&samples), csv.NewWriter(&tlsCSV)
	sw.Write(SamplesHeader)
	tw.Write(TLSHeader)
	for ci, ref := range m.Cells() {
		g, s, _ := strings.Cut(ref.Algorithm, "+")
		for _, stack := range m.Spec.TLS.Stacks {
			c := Cell{Algorithm: ref.Algorithm, Operation: ref.Operation, Variant: TLSStackVariant(stack), Unit: UnitNanoseconds, Counter: "test", Requested: 5}
			if stack == StackCryptoTLS && g == "ML-KEM-512" {
				c.Status, c.Error = StatusSkipped, "crypto/tls has no ML-KEM-512"
				res.Cells = append(res.Cells, c)
				continue
			}
			var lat []float64
			for i := range 5 {
				lat = append(lat, float64(100000*(ci+1)+(i*37)%11))
			}
			cpuC, cpuS := []float64{900, 950, 1000}, []float64{800, 700, 750}
			keyShare := []float64{10, 11, 12, 13, 14}
			c.Status, c.Stats = StatusOK, Summarize(lat)
			grp, _ := LookupTLSGroup(g)
			c.TLS = &TLSCell{Group: g, Signature: s, CipherSuite: "TLS_AES_128_GCM_SHA256", Stack: stack, Batch: 2,
				ClientCPU: Summarize(cpuC), ServerCPU: Summarize(cpuS), BytesClient: grp.ClientShare + 200, BytesServer: grp.ServerShare + 3000, Flights: 3, ChainBytes: 2000}
			series := []TLSSeries{{TLSSeriesCPU, SideClient, cpuC}, {TLSSeriesCPU, SideServer, cpuS}}
			if addr := m.Spec.TLS.Server; addr != "" {
				c.TLS.ServerCPU, series = nil, series[:1]
				c.TLS.Server = &TLSPeer{Address: addr, Subject: "CN=matrix.pqrepro.test", SANs: []string{"matrix.pqrepro.test"}, Issuer: "CN=test CA",
					KeyAlgorithm: s, Leaf: Digest([]byte(s))}
			}
			if stack == StackPQRepro {
				c.TLS.Phases = []TLSPhase{{Name: "key-share", Side: SideClient, Stats: Summarize(keyShare)}}
				series = append(series, TLSSeries{"key-share", SideClient, keyShare})
			}
			c.TLS.Role = RoleOf(m.Spec.TLS.Role)
			var rounds []int
			if c.TLS.Role == TLSRoleServer && strings.HasPrefix(s, "ML-DSA") {
				rounds = []int{1, 4, 2, 7, 3} // as a signer that reports them would
				c.TLS.Rounds = Summarize([]float64{1, 4, 2, 7, 3})
			}
			res.Cells = append(res.Cells, c)
			for i, v := range lat {
				sw.Write([]string{c.Algorithm, c.Operation, strconv.Itoa(i), strconv.FormatFloat(v, 'f', -1, 64), string(c.Unit), c.Variant})
			}
			if err := WriteTLSRows(tw, KeyOf(c), c.TLS.Role, rounds, series); err != nil {
				t.Fatal(err)
			}
		}
	}
	sw.Flush()
	tw.Flush()
	resJSON, _ := json.Marshal(res)
	b := &Bundle{Files: map[string][]byte{FileManifest: m.YAML(), FileResult: resJSON, FileSamples: samples.Bytes(), FileTLS: tlsCSV.Bytes(),
		FileEnvironment: []byte("{}"), FileLog: []byte("test\n")}}
	return m, res, b
}

func TestTLSRederive(t *testing.T) {
	_, _, b := tlsFixture(t)
	if _, _, err := RederiveBundle(b); err != nil {
		t.Fatalf("consistent bundle: %v", err)
	}
	tamper := func(name, from, to string) *Bundle {
		t.Helper()
		c := &Bundle{Files: map[string][]byte{}}
		for k, v := range b.Files {
			c.Files[k] = v
		}
		if !bytes.Contains(c.Files[name], []byte(from)) {
			t.Fatalf("%s has no %q", name, from)
		}
		c.Files[name] = bytes.Replace(c.Files[name], []byte(from), []byte(to), 1)
		return c
	}
	tests := []struct {
		name        string
		b           *Bundle
		file, field string
	}{
		{"client cpu value", tamper(FileTLS, "cpu,client,1,950", "cpu,client,1,9500"), FileTLS, "tls.clientCpu"},
		{"server cpu row dropped", tamper(FileTLS, "X25519+Ed25519,handshake,,cpu,server,2,750,client,\n", ""), FileTLS, "tls.serverCpu.n"},
		{"phase value", tamper(FileTLS, "key-share,client,4,14", "key-share,client,4,1"), FileTLS, "tls.phases[0].stats"},
		{"stray series", tamper(FileTLS, "X25519+Ed25519,handshake,,key-share,client,0,10,client,\n", "X25519+Ed25519,handshake,,key-share,client,0,10,client,\nX25519+Ed25519,handshake,,sign,server,0,10,client,\n"), FileTLS, "series"},
		{"rows of a skipped cell", tamper(FileTLS, "series,side,index,value,role,rounds\n", "series,side,index,value,role,rounds\nML-KEM-512+ML-DSA-44,handshake,stack: crypto/tls,cpu,client,0,5,client,\n"), FileTLS, ""},
		{"group", tamper(FileResult, `"group":"X25519"`, `"group":"P-256"`), FileResult, "tls.group"},
		{"bytes below the key share", tamper(FileResult, `"bytesClient":1000`, `"bytesClient":700`), FileResult, "tls.bytesClient"},
		{"unknown variant", tamper(FileResult, `"variant":"stack: crypto/tls"`, `"variant":"stack: openssl"`), FileResult, "variant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := RederiveBundle(tt.b)
			var re *RederiveError
			if !errors.As(err, &re) || re.File != tt.file || !strings.HasPrefix(re.Field, tt.field) {
				t.Fatalf("error %v, want file %s field %s", err, tt.file, tt.field)
			}
		})
	}
	if _, _, err := RederiveBundle(tamper(FileTLS, "series,side", "series,sides")); err == nil || !strings.Contains(err.Error(), "tls.csv line 1") {
		t.Fatalf("bad header: %v", err)
	}
	noTLS := tamper(FileLog, "test", "test")
	delete(noTLS.Files, FileTLS)
	if _, _, err := RederiveBundle(noTLS); err == nil || !strings.Contains(err.Error(), "tls.csv") {
		t.Fatalf("bundle without tls.csv: %v", err)
	}
}

// outsideManifest is tlsManifest against an outside server.
var outsideManifest = strings.Replace(tlsManifest, "    batch: 2", "    batch: 2\n    server: 127.0.0.1:4433", 1)

func TestTLSServerField(t *testing.T) {
	m, err := ParseManifest([]byte(outsideManifest), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec.TLS.Server != "127.0.0.1:4433" {
		t.Fatalf("server %q", m.Spec.TLS.Server)
	}
	// "engine" is the default: the manifest keeps the identity it had without the field.
	plain, _ := ParseManifest([]byte(tlsManifest), "m.yaml")
	engine, err := ParseManifest([]byte(strings.Replace(outsideManifest, "127.0.0.1:4433", "engine", 1)), "m.yaml")
	if err != nil || engine.ID() != plain.ID() || engine.Spec.TLS.Server != "" {
		t.Fatalf("server: engine: %v, id %s vs %s", err, engine.ID(), plain.ID())
	}
	if m.ID() == plain.ID() {
		t.Fatal("an outside server does not change the manifest's identity")
	}
	back, err := ParseManifest(m.YAML(), "round trip")
	if err != nil || back.ID() != m.ID() {
		t.Fatalf("round trip: %v", err)
	}
	for _, bad := range []struct{ value, msg string }{
		{"localhost", "neither engine nor HOST:PORT"},
		{":443", "no host"},
		{"example.test:0", "port \"0\""},
		{"example.test:70000", "port"},
		{"example.test:https", "port"},
		{"'exa mple.test:443'", "cannot hold"},
		{"'[::1:443'", "neither engine"},
	} {
		_, err := ParseManifest([]byte(strings.Replace(outsideManifest, "127.0.0.1:4433", bad.value, 1)), "m.yaml")
		var me *ManifestError
		if !errors.As(err, &me) {
			t.Fatalf("%s accepted: %v", bad.value, err)
		}
		found := false
		for _, p := range me.Problems {
			found = found || (p.Field == "spec.tls.server" && p.Line == 10 && strings.Contains(p.Msg, bad.msg))
		}
		if !found {
			t.Errorf("%s: no spec.tls.server problem on line 10 containing %q in:\n%v", bad.value, bad.msg, err)
		}
	}
	for _, good := range []string{"[::1]:4433", "server.example.test:443", "10.0.0.7:8443"} {
		if got, err := ParseTLSServer(good); err != nil || got != good {
			t.Errorf("%s: %q, %v", good, got, err)
		}
	}
}

func TestTLSRederiveOutsideServer(t *testing.T) {
	_, _, b := tlsFixtureOf(t, outsideManifest)
	if _, _, err := RederiveBundle(b); err != nil {
		t.Fatalf("consistent bundle: %v", err)
	}
	tamper := func(name, from, to string) *Bundle {
		t.Helper()
		c := &Bundle{Files: map[string][]byte{}}
		for k, v := range b.Files {
			c.Files[k] = v
		}
		if !bytes.Contains(c.Files[name], []byte(from)) {
			t.Fatalf("%s has no %q", name, from)
		}
		c.Files[name] = bytes.ReplaceAll(c.Files[name], []byte(from), []byte(to))
		return c
	}
	tests := []struct {
		name, file, from, to, field string
	}{
		{"address", FileResult, `"address":"127.0.0.1:4433"`, `"address":"127.0.0.1:4434"`, "tls.server.address"},
		{"no peer", FileResult, `"server":{"address"`, `"serverx":{"address"`, "tls.server"},
		{"no key algorithm", FileResult, `"keyAlgorithm":"Ed25519"`, `"keyAlgorithm":""`, "tls.server.keyAlgorithm"},
		{"leaf digest", FileResult, `"leaf":"sha256:`, `"leaf":"md5:`, "tls.server.leaf"},
		{"server cpu", FileResult, `"serverCpu":null`, `"serverCpu":{"n":3,"median":750}`, "tls.serverCpu"},
		{"server phase", FileResult, `"side":"client"`, `"side":"server"`, "tls.phases[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := RederiveBundle(tamper(tt.file, tt.from, tt.to))
			var re *RederiveError
			if !errors.As(err, &re) || !strings.HasPrefix(re.Field, tt.field) {
				t.Fatalf("error %v, want field %s", err, tt.field)
			}
		})
	}
}

// FuzzParseTLSServer: spec.tls.server's parser never panics, and what it accepts is engine
// or a HOST:PORT that net.SplitHostPort reads back with a port in range.
func FuzzParseTLSServer(f *testing.F) {
	for _, s := range []string{"", "engine", "127.0.0.1:4433", "[::1]:443", "host:0", "a b:1", ":1", "host:65536", "x:01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTLSServer(s)
		if err != nil {
			return
		}
		if got == "" {
			if s != "" && s != TLSServerEngine {
				t.Fatalf("%q read as the engine", s)
			}
			return
		}
		host, port, err := net.SplitHostPort(got)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			t.Fatalf("%q accepted: host %q port %q", s, host, port)
		}
	})
}

// FuzzParseTLSSamples checks tls.csv parsing never panics and that what it accepts is
// within its limits, and re-derives a fuzzed tls.csv against a consistent result.
func FuzzParseTLSSamples(f *testing.F) {
	f.Add([]byte("algorithm,operation,variant,series,side,index,ns\nX25519+Ed25519,handshake,,cpu,client,0,900\n"))
	f.Add([]byte("algorithm,operation,variant,series,side,index,ns\nX25519+Ed25519,handshake,stack: crypto/tls,key-share,server,1,1e3\n"))
	f.Add([]byte("algorithm,operation\n"))
	f.Add([]byte("algorithm,operation,variant,series,side,index,value,role,rounds\nX25519+ML-DSA-44,handshake,,sign,server,0,900,server,3\nX25519+ML-DSA-44,handshake,,rest,server,0,9,server,3\n"))
	f.Add([]byte("algorithm,operation,variant,series,side,index,value,role,rounds\nX25519+Ed25519,handshake,,cpu,client,0,900,client,\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		rows, err := ParseTLSSamples(data)
		if err != nil {
			return
		}
		for k, series := range rows {
			for sk, vals := range series {
				if len(vals) > MaxSamplesPerCell || (sk.Side != SideClient && sk.Side != SideServer) {
					t.Fatalf("accepted %v %v with %d rows", k, sk, len(vals))
				}
				for _, v := range vals {
					if !tlsValue(v) {
						t.Fatalf("accepted value %v", v)
					}
				}
			}
		}
		m, res, b := tlsFixture(t)
		s, err := ParseSamples(b.Files[FileSamples])
		if err != nil {
			t.Fatal(err)
		}
		s.TLS = rows
		_ = Rederive(m, res, s) // must not panic
	})
}

// TestTLSLegacyHeader: a tls.csv written before phases had units (its value column named ns)
// reads as the same rows as today's; any other last column is refused.
func TestTLSLegacyHeader(t *testing.T) {
	rows := "X25519+Ed25519,handshake,,cpu,client,0,900\n"
	a, err := ParseTLSSamples([]byte("algorithm,operation,variant,series,side,index,ns\n" + rows))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseTLSSamples([]byte("algorithm,operation,variant,series,side,index,value\n" + rows))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) || len(a) != 1 {
		t.Fatalf("legacy %v, today %v", a, b)
	}
	if _, err := ParseTLSSamples([]byte("algorithm,operation,variant,series,side,index,us\n" + rows)); err == nil {
		t.Fatal("a header with a us column was accepted")
	}
}

// serverManifest is tlsManifest in the server role (the engine's stack only).
var serverManifest = strings.Replace(strings.Replace(tlsManifest, "[pqrepro, crypto/tls]", "[pqrepro]", 1), "    batch: 2", "    batch: 2\n    role: server", 1)

func TestTLSRoleIdentity(t *testing.T) {
	plain, err := ParseManifest([]byte(tlsManifest), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ParseManifest([]byte(strings.Replace(tlsManifest, "    batch: 2", "    batch: 2\n    role: client", 1)), "m.yaml")
	if err != nil || client.ID() != plain.ID() || client.Spec.TLS.Role != "" {
		t.Fatalf("role: client is the default and keeps the identity: %v, %s vs %s", err, client.ID(), plain.ID())
	}
	srv, err := ParseManifest([]byte(serverManifest), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if srv.Spec.TLS.Role != TLSRoleServer || RoleOf(plain.Spec.TLS.Role) != TLSRoleClient {
		t.Fatalf("roles %q, %q", srv.Spec.TLS.Role, plain.Spec.TLS.Role)
	}
	back, err := ParseManifest(srv.YAML(), "round trip")
	if err != nil || back.ID() != srv.ID() || back.Spec.TLS.Role != TLSRoleServer {
		t.Fatalf("round trip: %v", err)
	}
	noCrypto, _ := ParseManifest([]byte(strings.Replace(tlsManifest, "[pqrepro, crypto/tls]", "[pqrepro]", 1)), "m.yaml")
	if srv.ID() == noCrypto.ID() {
		t.Fatal("the server role does not change the manifest's identity")
	}
}

// TestTLSRoleRoundTrip: a server-role bundle with rounds re-derives, and its tls.csv reads back
// each cell's role and each handshake's rounds as written.
func TestTLSRoleRoundTrip(t *testing.T) {
	_, res, b := tlsFixtureOf(t, serverManifest)
	if _, _, err := RederiveBundle(b); err != nil {
		t.Fatalf("consistent bundle: %v", err)
	}
	f, err := ParseTLSFile(b.Files[FileTLS])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cells {
		k := KeyOf(c)
		if f.Roles[k] != TLSRoleServer {
			t.Errorf("%s: role %q", c.Algorithm, f.Roles[k])
		}
		want := []int(nil)
		if strings.Contains(c.Algorithm, "ML-DSA") {
			want = []int{1, 4, 2, 7, 3}
		}
		if !reflect.DeepEqual(f.Rounds[k], want) {
			t.Errorf("%s: rounds %v, want %v", c.Algorithm, f.Rounds[k], want)
		}
	}
	var back Result
	if err := json.Unmarshal(b.Files[FileResult], &back); err != nil {
		t.Fatal(err)
	}
	if r := back.Cells[0].TLS; r.Role != TLSRoleServer || r.Rounds == nil || r.Rounds.Max != 7 || r.Rounds.Median != 3 {
		t.Fatalf("result.json's first cell: role %q rounds %+v", r.Role, r.Rounds)
	}
}

// TestTLSRoleTampered: re-derivation refuses a role or rounds that result.json and tls.csv
// disagree on, or that the manifest rules out.
func TestTLSRoleTampered(t *testing.T) {
	_, _, b := tlsFixtureOf(t, serverManifest)
	tamper := func(name, from, to string, all bool) *Bundle {
		t.Helper()
		c := &Bundle{Files: map[string][]byte{}}
		for k, v := range b.Files {
			c.Files[k] = v
		}
		if !bytes.Contains(c.Files[name], []byte(from)) {
			t.Fatalf("%s has no %q", name, from)
		}
		n := 1
		if all {
			n = -1
		}
		c.Files[name] = bytes.Replace(c.Files[name], []byte(from), []byte(to), n)
		return c
	}
	tests := []struct {
		name        string
		b           *Bundle
		file, field string
	}{
		{"role in result.json", tamper(FileResult, `"role":"server"`, `"role":"client"`, false), FileResult, "tls.role"},
		{"role dropped from result.json", tamper(FileResult, `"role":"server",`, ``, false), FileResult, "tls.role"},
		{"role in tls.csv", tamper(FileTLS, "ML-KEM-512+ML-DSA-44,handshake,,cpu,client,0,900,server,", "ML-KEM-512+ML-DSA-44,handshake,,cpu,client,0,900,client,", false), FileTLS, ""},
		{"every role of a cell in tls.csv", roleOf(b, "X25519+Ed25519,", TLSRoleClient), FileTLS, "role"},
		{"rounds value", tamper(FileTLS, "key-share,client,3,13,server,7", "key-share,client,3,13,server,8", false), FileTLS, ""},
		{"rounds of every row of a handshake", tamper(FileTLS, ",3,13,server,7", ",3,13,server,9", true), FileTLS, "tls.rounds.max"},
		{"rounds dropped from result.json", tamper(FileResult, `"rounds":{`, `"roundsx":{`, false), FileTLS, "rounds"},
		{"rounds and their absence", tamper(FileResult, `"rounds":{`, `"roundsAbsent":"no","rounds":{`, false), FileResult, "tls.roundsAbsent"},
		{"rounds on a cpu row", tamper(FileTLS, "cpu,client,0,900,server,", "cpu,client,0,900,server,2", false), FileTLS, ""},
		{"rounds on an Ed25519 cell", tamper(FileTLS, "ML-KEM-512+Ed25519,handshake,,key-share,client,0,10,server,", "ML-KEM-512+Ed25519,handshake,,key-share,client,0,10,server,3", false), FileTLS, ""},
		{"a board's client in the server role", tamper(FileResult, `"role":"server"`, `"client":"pqrepro C client","role":"server"`, false), FileResult, "tls.client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := RederiveBundle(tt.b)
			var re *RederiveError
			switch {
			case err == nil:
				t.Fatal("accepted")
			case tt.field == "":
				if !strings.Contains(err.Error(), tt.file) {
					t.Fatalf("error %v, want one naming %s", err, tt.file)
				}
			case !errors.As(err, &re) || re.File != tt.file || !strings.HasPrefix(re.Field, tt.field):
				t.Fatalf("error %v, want file %s field %s", err, tt.file, tt.field)
			}
		})
	}
}

// roleOf is b with the role column of every tls.csv row starting with prefix set to role.
func roleOf(b *Bundle, prefix, role string) *Bundle {
	c := &Bundle{Files: map[string][]byte{}}
	for k, v := range b.Files {
		c.Files[k] = v
	}
	lines := strings.Split(string(b.Files[FileTLS]), "\n")
	for i, l := range lines {
		if f := strings.Split(l, ","); strings.HasPrefix(l, prefix) && len(f) == len(TLSHeader) {
			f[7] = role
			lines[i] = strings.Join(f, ",")
		}
	}
	c.Files[FileTLS] = []byte(strings.Join(lines, "\n"))
	return c
}

// TestTLSRoundsParse: the rounds column's own rules, each refused with its line.
func TestTLSRoundsParse(t *testing.T) {
	head := strings.Join(TLSHeader, ",") + "\n"
	tests := []struct{ name, rows, msg string }{
		{"cpu row", "A+B,handshake,,cpu,server,0,9,server,2\n", "line 2: rounds \"2\" on a cpu row"},
		{"zero", "A+B,handshake,,sign,server,0,9,server,0\n", "line 2: rounds \"0\": not an integer from 1"},
		{"not a number", "A+B,handshake,,sign,server,0,9,server,x\n", "not an integer"},
		{"some rows only", "A+B,handshake,,sign,server,0,9,server,2\nA+B,handshake,,sign,server,1,9,server,\n", "line 3: rounds of A+B server sign handshake 1: empty"},
		{"rows after none", "A+B,handshake,,sign,server,0,9,server,\nA+B,handshake,,sign,server,1,9,server,3\n", "line 3: rounds \"3\" of A+B server sign handshake 1: earlier rows of the cell gave none"},
		{"rows disagree", "A+B,handshake,,sign,server,0,9,server,2\nA+B,handshake,,rest,server,0,9,server,3\n", "line 3: rounds 3 of A+B handshake 0, another of its rows said 2"},
		{"unknown role", "A+B,handshake,,cpu,server,0,9,board,\n", "line 2: role \"board\""},
		{"two roles", "A+B,handshake,,cpu,server,0,9,server,\nA+B,handshake,,cpu,server,1,9,client,\n", "line 3: role \"client\" of A+B , earlier rows said \"server\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTLSFile([]byte(head + tt.rows))
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v, want %q", err, tt.msg)
			}
		})
	}
	f, err := ParseTLSFile([]byte(head + "A+B,handshake,,sign,server,0,9,server,2\nA+B,handshake,,sign,server,1,9,server,5\nA+B,handshake,,rest,server,0,9,server,2\nA+B,handshake,,rest,server,1,9,server,5\n"))
	k := CellKey{"A+B", "handshake", ""}
	if err != nil || !reflect.DeepEqual(f.Rounds[k], []int{2, 5}) || f.Roles[k] != TLSRoleServer {
		t.Fatalf("rounds %v role %q: %v", f.Rounds[k], f.Roles[k], err)
	}
}

// TestTLSBundleBeforeRoles: a bundle written before roles (tls.csv without role and rounds,
// result.json without tls.role) still re-derives, as the client role's.
func TestTLSBundleBeforeRoles(t *testing.T) {
	_, _, b := tlsFixture(t)
	old := &Bundle{Files: map[string][]byte{}}
	for k, v := range b.Files {
		old.Files[k] = v
	}
	old.Files[FileResult] = bytes.ReplaceAll(b.Files[FileResult], []byte(`,"role":"client"`), nil)
	if bytes.Contains(old.Files[FileResult], []byte(`"role"`)) {
		t.Fatal("result.json still has a role")
	}
	csvOld := bytes.ReplaceAll(b.Files[FileTLS], []byte(",client,\n"), []byte("\n"))
	csvOld = bytes.Replace(csvOld, []byte(",role,rounds\n"), []byte("\n"), 1)
	old.Files[FileTLS] = csvOld
	if _, _, err := RederiveBundle(old); err != nil {
		t.Fatalf("a bundle from before roles: %v", err)
	}
	f, err := ParseTLSFile(csvOld)
	if err != nil || len(f.Roles) == 0 || len(f.Rounds) != 0 {
		t.Fatalf("roles %v rounds %v: %v", f.Roles, f.Rounds, err)
	}
	for k, r := range f.Roles {
		if r != TLSRoleClient {
			t.Fatalf("%v read as %q", k, r)
		}
	}
}

// boardServerFixture is a server-role result as a board's own C server would give it (a
// fixture, not a measurement): instruction counts, the board's server phases in that unit, the
// runner's client's engine phases in ns, ML-DSA rounds, and no CPU on either side.
func boardServerFixture(t *testing.T) *Bundle {
	t.Helper()
	m, err := ParseManifest([]byte(serverManifest), "test")
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Schema: ResultSchema, Experiment: m.Ref(), ManifestID: m.ID(), Kind: m.Kind, Method: m.Spec.Method, Board: "qemu-mps2-an505", Assurance: AssuranceEmulated}
	var samples, tlsCSV bytes.Buffer
	sw, tw := csv.NewWriter(&samples), csv.NewWriter(&tlsCSV)
	sw.Write(SamplesHeader)
	tw.Write(TLSHeader)
	for ci, ref := range m.Cells() {
		g, s, _ := strings.Cut(ref.Algorithm, "+")
		grp, _ := LookupTLSGroup(g)
		c := Cell{Algorithm: ref.Algorithm, Operation: ref.Operation, Unit: UnitInstructions, Counter: "test", Requested: 5, Status: StatusOK}
		c.TLS = &TLSCell{Group: g, Signature: s, CipherSuite: "TLS_AES_128_GCM_SHA256", Stack: StackPQRepro, Batch: 2, Role: TLSRoleServer,
			BoardServer: SerialTLSServer + " (board firmware pqrepro-fw 0.3.0)", BytesClient: grp.ClientShare + 200, BytesServer: grp.ServerShare + 3000, Flights: 3, ChainBytes: 2000}
		var total []float64
		var series []TLSSeries
		for pi, name := range BoardServerPhaseNames() {
			vals := []float64{float64(1000 * (pi + 1)), float64(1100 * (pi + 1)), float64(1000 * (pi + 1)), float64(1200 * (pi + 1)), float64(1000*(pi+1) + ci)}
			series = append(series, TLSSeries{name, SideServer, vals})
			c.TLS.Phases = append(c.TLS.Phases, TLSPhase{Name: name, Side: SideServer, Unit: UnitInstructions, Stats: Summarize(vals)})
			for i, v := range vals {
				if pi == 0 {
					total = append(total, 0)
				}
				total[i] += v
			}
		}
		keyShare := []float64{10, 11, 12, 13, 14}
		series = append(series, TLSSeries{"key-share", SideClient, keyShare})
		c.TLS.Phases = append(c.TLS.Phases, TLSPhase{Name: "key-share", Side: SideClient, Stats: Summarize(keyShare)})
		var rounds []int
		if strings.HasPrefix(s, "ML-DSA") {
			rounds = []int{2, 1, 5, 1, 3}
			c.TLS.Rounds = Summarize([]float64{2, 1, 5, 1, 3})
		}
		c.Stats = Summarize(total)
		res.Cells = append(res.Cells, c)
		for i, v := range total {
			sw.Write([]string{c.Algorithm, c.Operation, strconv.Itoa(i), strconv.FormatFloat(v, 'f', -1, 64), string(c.Unit), ""})
		}
		if err := WriteTLSRows(tw, KeyOf(c), TLSRoleServer, rounds, series); err != nil {
			t.Fatal(err)
		}
	}
	sw.Flush()
	tw.Flush()
	resJSON, _ := json.Marshal(res)
	return &Bundle{Files: map[string][]byte{FileManifest: m.YAML(), FileResult: resJSON, FileSamples: samples.Bytes(), FileTLS: tlsCSV.Bytes(),
		FileEnvironment: []byte("{}"), FileLog: []byte("test\n")}}
}

// TestTLSRederiveBoardServer: a board's server cells re-derive (their own phases in the
// board's unit, rounds, no CPU); CPU on either side, a server phase outside the board's split or
// in ns, and a board server in the client role are refused.
func TestTLSRederiveBoardServer(t *testing.T) {
	b := boardServerFixture(t)
	if _, _, err := RederiveBundle(b); err != nil {
		t.Fatalf("consistent bundle: %v", err)
	}
	tamper := func(from, to string) *Bundle {
		t.Helper()
		c := &Bundle{Files: map[string][]byte{}}
		for k, v := range b.Files {
			c.Files[k] = v
		}
		if !bytes.Contains(c.Files[FileResult], []byte(from)) {
			t.Fatalf("result.json has no %q", from)
		}
		c.Files[FileResult] = bytes.Replace(c.Files[FileResult], []byte(from), []byte(to), 1)
		return c
	}
	for _, tt := range []struct{ name, from, to, field string }{
		{"client cpu", `"clientCpu":null`, `"clientCpu":{"n":3,"median":5}`, "tls.clientCpu"},
		{"server cpu", `"serverCpu":null`, `"serverCpu":{"n":3,"median":5}`, "tls.serverCpu"},
		{"a server phase in ns", `"name":"sign","side":"server","unit":"instructions"`, `"name":"sign","side":"server"`, "tls.phases[1]"},
		{"a client phase name on the server", `"name":"sign","side":"server"`, `"name":"verify","side":"server"`, "tls.phases[1]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := RederiveBundle(tamper(tt.from, tt.to))
			var re *RederiveError
			if !errors.As(err, &re) || !strings.HasPrefix(re.Field, tt.field) {
				t.Fatalf("error %v, want field %s", err, tt.field)
			}
		})
	}
	var res Result
	json.Unmarshal(b.Files[FileResult], &res)
	if c := res.Cells[0]; !c.BoardCounts() || c.TLS.Measured() != c.TLS.BoardServer || c.BoardPhaseMedians()["sign"] != 2000 {
		t.Fatalf("board counts %v, measured %q, phase medians %v", c.BoardCounts(), c.TLS.Measured(), c.BoardPhaseMedians())
	}
}
