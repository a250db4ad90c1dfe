package proctree

import (
	"slices"
	"sync"
)

// sharedScan serves Find and Kill: a stop of many units at once has each
// unit's reap ask for a fresh look at every process's environment, and
// one /proc pass per caller made that quadratic (a stop of 1,000 units
// read 1,000 × 2,000 environs). A pass records every process's marker
// values and serves every caller that arrived before it began, so
// concurrent callers share a pass and none is answered from a pass that
// began before it asked.
type sharedScan struct {
	passMu       sync.Mutex // one pass at a time
	mu           sync.Mutex // guards the fields below
	begun, ended uint64
	procs        []procInfo       // the last pass, marked unset
	trees        map[int][]string // pid -> its HARNESS_TREE values, live processes only
}

var shared sharedScan

// scan is the package's scan(match) through a shared pass.
func (s *sharedScan) scan(match func(string) bool) []procInfo {
	s.mu.Lock()
	want := s.begun + 1
	s.mu.Unlock()
	s.passMu.Lock()
	s.mu.Lock()
	if s.ended < want {
		s.begun++
		s.mu.Unlock()
		trees := map[int][]string{}
		procs := scanPIDs(func(pid int, v string) bool {
			trees[pid] = append(trees[pid], v)
			return false // every value is wanted
		}, false)
		s.mu.Lock()
		s.procs, s.trees, s.ended = procs, trees, s.begun
	}
	procs, trees := s.procs, s.trees
	s.mu.Unlock()
	s.passMu.Unlock()

	out := slices.Clone(procs) // callers mark and change their copy
	for i := range out {
		for _, v := range trees[out[i].pid] {
			if match(v) {
				out[i].marked = true
				break
			}
		}
	}
	return out
}
