package supervise

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// quietSample is what the main threads of the processes in a terminal's
// foreground process group were doing at one moment: whether each slept
// (none was running, waiting for a CPU or for a disk) and how many times,
// in all, they had been scheduled to run. A main thread is where an event
// loop runs (Node's): it sleeps only when the loop has nothing due.
type quietSample struct {
	asleep bool
	runs   uint64
}

// sampleQuiet samples the foreground process group of master's terminal;
// ok is false when it cannot be told (no group, no /proc).
func sampleQuiet(master *os.File) (s quietSample, ok bool) {
	rc, err := master.SyscallConn()
	if err != nil {
		return s, false
	}
	pgrp := 0
	_ = rc.Control(func(fd uintptr) { pgrp, _ = unix.IoctlGetInt(int(fd), unix.TIOCGPGRP) })
	if pgrp <= 0 {
		return s, false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return s, false
	}
	s.asleep = true
	found := false
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		dir := filepath.Join("/proc", p.Name())
		state, group, ok := procState(filepath.Join(dir, "stat"))
		if !ok || group != pgrp {
			continue
		}
		found = true
		if state == 'R' || state == 'D' {
			s.asleep = false
		}
		s.runs += timesRun(filepath.Join(dir, "schedstat"))
	}
	return s, found
}

// procState reads the state and process group of a stat file (of a
// process: its main thread's state).
func procState(path string) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp …; comm may hold anything but not the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], g, true
}

// timesRun is the third field of a schedstat file (of a process: its main
// thread's): how many times it has run on a CPU (0 when it cannot be read).
func timesRun(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 0
	}
	n, _ := strconv.ParseUint(string(f[2]), 10, 64)
	return n
}
