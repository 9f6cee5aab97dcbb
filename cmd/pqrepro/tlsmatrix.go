package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"pqrepro/artifacts"
)

// printTLSMatrix prints a tls-matrix result: one row per cell and stack (its role, the
// measured side's handshake time, the signature's rejection rounds where measured, each
// side's CPU per handshake, bytes each way, chain bytes), then a groups ×
// signatures grid of median latencies in µs per stack, and, with two stacks, the ratio of
// the engine's median to crypto/tls's per cell.
func printTLSMatrix(w io.Writer, res *artifacts.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CELL\tSTACK\tROLE\tSTATUS\tN\tMEDIAN\tP25\tP75\tROUNDS\tCLIENT CPU\tSERVER CPU\tC→S B\tS→C B\tCHAIN B\tFLIGHTS\tHRR\t")
	var notes []string
	var groups, sigs, stacks []string
	median := map[[3]string]float64{}
	units := map[string]artifacts.Unit{} // each stack's unit (ns on the host, a board's counter)
	for _, c := range res.Cells {
		g, s, _ := strings.Cut(c.Algorithm, "+")
		stack := artifacts.StackPQRepro
		if c.Variant != "" {
			stack = strings.TrimPrefix(c.Variant, "stack: ")
		}
		for _, l := range []struct {
			list *[]string
			v    string
		}{{&groups, g}, {&sigs, s}, {&stacks, stack}} {
			if !slices.Contains(*l.list, l.v) {
				*l.list = append(*l.list, l.v)
			}
		}
		if c.Status != artifacts.StatusOK {
			notes = append(notes, fmt.Sprintf("%s [%s] %s: %s", c.Algorithm, stack, c.Status, c.Error))
			fmt.Fprintf(tw, "%s\t%s\t-\t%s [%d]\t\t\t\t\t\t\t\t\t\t\t\t\t\n", c.Algorithm, stack, c.Status, len(notes))
			continue
		}
		median[[3]string{g, s, stack}] = c.Stats.Median
		units[stack] = c.Unit
		cpu := func(st *artifacts.Stats) string {
			if st == nil {
				return "-"
			}
			return human(st.Median, artifacts.UnitNanoseconds)
		}
		t := c.TLS
		if t == nil {
			t = &artifacts.TLSCell{}
		}
		flights, hrr := "-", "no"
		if t.Flights > 0 {
			flights = fmt.Sprint(t.Flights)
		}
		if t.HelloRetry {
			hrr = "yes"
		}
		rounds := "-"
		if r := t.Rounds; r != nil {
			rounds = fmt.Sprintf("%g/%g/%g", r.Min, r.Median, r.Max)
		}
		st := c.Stats
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t\n", c.Algorithm, stack, artifacts.RoleOf(t.Role), c.Status, st.N,
			human(st.Median, c.Unit), human(st.P25, c.Unit), human(st.P75, c.Unit), rounds, cpu(t.ClientCPU), cpu(t.ServerCPU),
			t.BytesClient, t.BytesServer, t.ChainBytes, flights, hrr)
	}
	tw.Flush()
	for i, n := range notes {
		fmt.Fprintf(w, "[%d] %s\n", i+1, n)
	}
	printTLSRole(w, res)
	printTLSPeers(w, res)
	printBoardPhases(w, res)
	printTLSGrids(w, groups, sigs, stacks, median, units)
}

// printTLSRole says what MEDIAN is, by the role the cells measured (client or server, on the
// host or a board's own count), and why rounds are absent where a cell says so.
func printTLSRole(w io.Writer, res *artifacts.Result) {
	role, server := artifacts.TLSRoleClient, false
	for _, c := range res.Cells {
		if c.TLS != nil {
			role = artifacts.RoleOf(c.TLS.Role)
			server = role == artifacts.TLSRoleServer
			break
		}
	}
	side, peer := "client", "server"
	if server {
		side, peer = "server", "client"
	}
	switch counted := boardCountUnit(res); {
	case counted != "":
		fmt.Fprintf(w, "role %s: MEDIAN, P25, P75 in %s: the board's own %s, its computation only (waiting for the %s excluded); never compared with times\n", role, counted, side, peer)
	case server:
		fmt.Fprintln(w, "role server: MEDIAN is the server's own time in its handshake (its waits for the client's bytes excluded); CPU: user + system per handshake (kernel per-process accounting over each batch), median over batches")
	default:
		fmt.Fprintln(w, "role client: latency is the client's Handshake call; CPU: user + system per handshake (kernel per-process accounting over each batch), median over batches")
	}
	seen := map[string]bool{}
	for _, c := range res.Cells {
		if c.TLS != nil && c.TLS.RoundsAbsent != "" && !seen[c.TLS.RoundsAbsent] {
			seen[c.TLS.RoundsAbsent] = true
			fmt.Fprintf(w, "ROUNDS (ML-DSA rejection rounds per signature, min/median/max): not measured: %s\n", c.TLS.RoundsAbsent)
		}
	}
}

// printTLSGrids prints a groups × signatures grid of median handshakes per stack (µs on the
// host, the board's unit for a board's counts) and, with crypto/tls among the stacks, the
// ratio of the engine's median to crypto/tls's per cell.
func printTLSGrids(w io.Writer, groups, sigs, stacks []string, median map[[3]string]float64, units map[string]artifacts.Unit) {
	grid := func(title string, val func(g, s string) string) {
		fmt.Fprintf(w, "\n%s\n", title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "\t")
		for _, s := range sigs {
			fmt.Fprintf(tw, "%s\t", s)
		}
		fmt.Fprintln(tw)
		for _, g := range groups {
			fmt.Fprintf(tw, "%s\t", g)
			for _, s := range sigs {
				fmt.Fprintf(tw, "%s\t", val(g, s))
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	for _, stack := range stacks {
		unit, scale := "µs", 1e3
		if u, ok := units[stack]; ok && !u.IsTime() {
			unit, scale = string(u), 1
		}
		grid("MEDIAN HANDSHAKE ("+unit+"), stack "+stack, func(g, s string) string {
			if v, ok := median[[3]string{g, s, stack}]; ok {
				return fmt.Sprintf("%.0f", v/scale)
			}
			return "-"
		})
	}
	if slices.Contains(stacks, artifacts.StackCryptoTLS) {
		var ratios []float64
		grid("RATIO OF MEDIANS pqrepro / crypto/tls", func(g, s string) string {
			a, ok1 := median[[3]string{g, s, artifacts.StackPQRepro}]
			b, ok2 := median[[3]string{g, s, artifacts.StackCryptoTLS}]
			if !ok1 || !ok2 || b == 0 {
				return "-"
			}
			ratios = append(ratios, a/b)
			return fmt.Sprintf("%.2f", a/b)
		})
		if len(ratios) > 0 {
			slices.Sort(ratios)
			fmt.Fprintf(w, "%d cells: ratio min %.2f, median %.2f, max %.2f\n", len(ratios), ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1])
		}
	}
}

// printTLSPeers names the outside server(s) that answered a run's cells, once each.
func printTLSPeers(w io.Writer, res *artifacts.Result) {
	seen := map[string]bool{}
	for _, c := range res.Cells {
		if c.TLS == nil || c.TLS.Server == nil {
			continue
		}
		p := c.TLS.Server
		line := fmt.Sprintf("server: the outside server at %s answered: leaf %q (SAN %s), %s key, issuer %q, %s; its CPU is its own (not measured)",
			p.Address, p.Subject, strings.Join(p.SANs, ", "), p.KeyAlgorithm, p.Issuer, artifacts.ShortDigest(p.Leaf))
		if !seen[line] {
			seen[line] = true
			fmt.Fprintln(w, line)
		}
	}
}

// boardCountUnit is the unit of a run whose ok cells are a board's own counts (a client named,
// a unit that is not time), "" otherwise.
func boardCountUnit(res *artifacts.Result) artifacts.Unit {
	for _, c := range res.Cells {
		if c.Status == artifacts.StatusOK && c.BoardCounts() {
			return c.Unit
		}
	}
	return ""
}

// printBoardPhases prints where a board's count goes: each ok cell's client phases
// (artifacts.BoardPhaseNames) or, for a board's server, its server phases
// (artifacts.BoardServerPhaseNames), medians in the cell's unit with their share of its median.
func printBoardPhases(w io.Writer, res *artifacts.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := false
	for _, c := range res.Cells {
		if c.Status != artifacts.StatusOK || c.TLS == nil || c.Stats == nil || c.Stats.Median == 0 {
			continue
		}
		vals := c.BoardPhaseMedians()
		if len(vals) == 0 {
			continue
		}
		names := artifacts.BoardPhaseNames()
		if c.TLS.BoardServer != "" {
			names = artifacts.BoardServerPhaseNames()
		}
		if !header {
			fmt.Fprintf(w, "\nWHERE THE BOARD'S COUNT GOES (%s, medians; share of the cell's median)\n", c.Unit)
			fmt.Fprintf(tw, "CELL\t%s\t\n", strings.Join(names, "\t"))
			header = true
		}
		fmt.Fprintf(tw, "%s\t", c.Algorithm)
		for _, name := range names {
			if v, ok := vals[name]; ok {
				fmt.Fprintf(tw, "%.0f (%.1f%%)\t", v, 100*v/c.Stats.Median)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}
