// Command stackpeak reads the call graphs GCC writes with
// -fcallgraph-info=su (one .ci file per object) and prints, for every
// function whose name matches -match, its worst-case stack depth: its own
// frame plus the deepest chain of static frames below it.
//
//	go run ./firmware/tools/stackpeak -match '^mldsa(44|65|87)_' build/T/stack/*.ci
//
// It fails when a frame is dynamic (alloca or a VLA), when the graph is
// recursive, or when a callee has no frame in the given files (an indirect
// call or an object that was left out), so a printed figure is a bound the
// compiler's own frame sizes support.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var (
	nodeRe  = regexp.MustCompile(`^node: \{ title: "([^"]+)" label: "([^"]*)"`)
	edgeRe  = regexp.MustCompile(`^edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"`)
	frameRe = regexp.MustCompile(`\\n(\d+) bytes \(([a-z]+)`)
)

// graph holds each function's frame (-1: none known) and its callees.
type graph struct {
	frame map[string]int
	calls map[string][]string
}

// name drops the "file.c:" prefix GCC puts on static functions.
func name(title string) string { return title[strings.LastIndex(title, ":")+1:] }

func (g *graph) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read call graph: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := nodeRe.FindStringSubmatch(line); m != nil {
			fn := name(m[1])
			if fr := frameRe.FindStringSubmatch(m[2]); fr != nil {
				if fr[2] != "static" {
					return fmt.Errorf("%s: %s has a %s frame", path, fn, fr[2])
				}
				n, _ := strconv.Atoi(fr[1])
				g.frame[fn] = n
			} else if _, ok := g.frame[fn]; !ok {
				g.frame[fn] = -1
			}
		} else if m := edgeRe.FindStringSubmatch(line); m != nil {
			g.calls[name(m[1])] = append(g.calls[name(m[1])], name(m[2]))
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// peak returns fn's worst-case depth and the chain that reaches it.
func (g *graph) peak(fn string, onPath map[string]bool, memo map[string][]string, depth map[string]int) (int, []string, error) {
	if d, ok := depth[fn]; ok {
		return d, memo[fn], nil
	}
	if onPath[fn] {
		return 0, nil, fmt.Errorf("recursion through %s", fn)
	}
	fr := g.frame[fn]
	if fr < 0 {
		return 0, nil, fmt.Errorf("no frame size for %s (object missing, or an indirect call)", fn)
	}
	onPath[fn] = true
	best, chain := 0, []string(nil)
	for _, c := range g.calls[fn] {
		d, ch, err := g.peak(c, onPath, memo, depth)
		if err != nil {
			return 0, nil, fmt.Errorf("%s > %w", fn, err)
		}
		if d > best {
			best, chain = d, ch
		}
	}
	delete(onPath, fn)
	depth[fn], memo[fn] = fr+best, append([]string{fn}, chain...)
	return depth[fn], memo[fn], nil
}

func main() {
	match := flag.String("match", ".", "regular expression selecting the functions to report")
	leaf := flag.String("leaf", "", "comma-separated name=bytes of functions without call-graph info (libgcc helpers such as __aeabi_lmul on Armv6-M), taken as leaves of that frame size")
	flag.Parse()
	re, err := regexp.Compile(*match)
	if err != nil {
		log.Fatalf("stackpeak: -match: %v", err)
	}
	g := &graph{frame: map[string]int{}, calls: map[string][]string{}}
	for _, p := range flag.Args() {
		if err := g.read(p); err != nil {
			log.Fatalf("stackpeak: %v", err)
		}
	}
	for _, kv := range strings.FieldsFunc(*leaf, func(r rune) bool { return r == ',' }) {
		name, size, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(size)
		if !ok || err != nil || n < 0 {
			log.Fatalf("stackpeak: -leaf %q: want name=bytes", kv)
		}
		if g.frame[name] < 0 || g.frame[name] == 0 {
			g.frame[name] = n
		}
	}
	var fns []string
	for fn, fr := range g.frame {
		if fr >= 0 && re.MatchString(fn) {
			fns = append(fns, fn)
		}
	}
	sort.Strings(fns)
	memo, depth := map[string][]string{}, map[string]int{}
	for _, fn := range fns {
		d, chain, err := g.peak(fn, map[string]bool{}, memo, depth)
		if err != nil {
			log.Fatalf("stackpeak: %v", err)
		}
		fmt.Printf("%-28s %6d B  %s\n", fn, d, strings.Join(chain, " > "))
	}
}
