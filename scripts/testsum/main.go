// Command testsum reads `go test -json` on its input and writes what a
// plain `go test` run would (each package's result line; a failed test's
// output, whole; build errors; a crashed test binary's dump) followed by
// the tests that took longest, so that every CI run says where its time
// went. It exits 1 when a package failed or did not build.
//
//	go test -json ./... | go run ./scripts/testsum -slow 30s
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of test2json's output.
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

type key struct{ pkg, test string }

// summary keeps each running test's output until it ends: printed when
// it failed (or never ended, as when its binary timed out), dropped when
// it passed or skipped.
type summary struct {
	out     io.Writer
	running map[key]*strings.Builder
	order   []key // when each test started, to print unfinished ones in order
	took    map[key]float64
	failed  bool
}

func newSummary(out io.Writer) *summary {
	return &summary{out: out, running: map[key]*strings.Builder{}, took: map[key]float64{}}
}

func (s *summary) line(raw []byte) {
	var e event
	if err := json.Unmarshal(raw, &e); err != nil || e.Action == "" {
		fmt.Fprintf(s.out, "%s\n", raw) // not test2json's: go's own words, as they are
		return
	}
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.out, e.Output)
		return
	case "build-fail":
		s.failed = true
		return
	}
	if e.Test == "" {
		s.pkg(e)
		return
	}
	k := key{e.Package, e.Test}
	switch e.Action {
	case "run":
		if s.running[k] == nil {
			s.running[k] = &strings.Builder{}
			s.order = append(s.order, k)
		}
	case "output":
		if b := s.running[k]; b != nil {
			b.WriteString(e.Output)
		}
	case "fail":
		if b := s.running[k]; b != nil {
			fmt.Fprint(s.out, b.String())
		}
		s.took[k] = e.Elapsed
		delete(s.running, k)
	case "pass", "skip":
		s.took[k] = e.Elapsed
		delete(s.running, k)
	}
}

// pkg writes a package's own lines: its result, and what its binary
// said outside any test (a panic, a timeout's dump).
func (s *summary) pkg(e event) {
	switch e.Action {
	case "output":
		if e.Output != "PASS\n" {
			fmt.Fprint(s.out, e.Output)
		}
	case "fail":
		s.failed = true
		// Tests that never ended: the binary died under them.
		for _, k := range s.order {
			if b := s.running[k]; k.pkg == e.Package && b != nil {
				fmt.Fprintf(s.out, "--- unfinished: %s\n%s", k.test, b.String())
				delete(s.running, k)
			}
		}
	}
}

// slowest writes the tests that took at least min, slowest first, at
// most n of them.
func (s *summary) slowest(min time.Duration, n int) {
	type took struct {
		key
		d time.Duration
	}
	var all []took
	for k, sec := range s.took {
		if d := time.Duration(sec * float64(time.Second)); d >= min {
			all = append(all, took{k, d})
		}
	}
	if len(all) == 0 {
		return
	}
	slices.SortFunc(all, func(a, b took) int {
		return cmp.Or(cmp.Compare(b.d, a.d), cmp.Compare(a.test, b.test))
	})
	fmt.Fprintf(s.out, "tests that took %v or more (%d; parallel ones overlap):\n", min, len(all))
	for i, t := range all {
		if i == n {
			fmt.Fprintf(s.out, "  … %d more\n", len(all)-n)
			break
		}
		fmt.Fprintf(s.out, "  %7.1fs  %s  %s\n", t.d.Seconds(), strings.TrimPrefix(t.pkg, "github.com/harness-dev/harness/"), t.test)
	}
}

func main() {
	min := flag.Duration("slow", 30*time.Second, "list the tests that took at least this long")
	n := flag.Int("n", 40, "list at most this many")
	flag.Parse()
	s := newSummary(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for in.Scan() {
		s.line(in.Bytes())
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(1)
	}
	s.slowest(*min, *n)
	if s.failed {
		os.Exit(1)
	}
}
