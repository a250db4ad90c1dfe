package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuUse is CPU time (user + system) by the role a process plays on a
// path: the bench's own client, the `harness mcp` bridges, the daemon and
// the upstream server processes.
type cpuUse struct {
	Client, Bridge, Daemon, Upstream time.Duration
}

func (u cpuUse) total() time.Duration { return u.Client + u.Bridge + u.Daemon + u.Upstream }

func (u cpuUse) sub(v cpuUse) cpuUse {
	return cpuUse{u.Client - v.Client, u.Bridge - v.Bridge, u.Daemon - v.Daemon, u.Upstream - v.Upstream}
}

func (u cpuUse) add(v cpuUse) cpuUse {
	return cpuUse{u.Client + v.Client, u.Bridge + v.Bridge, u.Daemon + v.Daemon, u.Upstream + v.Upstream}
}

// per divides every role's time by n calls.
func (u cpuUse) per(n int) cpuUse {
	if n == 0 {
		return cpuUse{}
	}
	d := time.Duration(n)
	return cpuUse{u.Client / d, u.Bridge / d, u.Daemon / d, u.Upstream / d}
}

// userHZ is the unit of /proc/PID/stat times; the kernel ABI fixes it at
// 100 whatever the kernel's internal tick rate.
const userHZ = 100

// procStat is what sampleCPU needs of one /proc entry.
type procStat struct {
	ppid int
	cpu  time.Duration
	args []string
}

// sampleCPU reads the CPU time used so far by this process, the daemon
// (pid daemon) and every descendant of either, classified by role. Call it
// before and after a measurement while the same sessions are open: a
// process that starts or ends in between is counted wrongly.
func sampleCPU(daemon int) cpuUse {
	self := os.Getpid()
	procs := map[int]procStat{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readProcStat(pid); ok {
			procs[pid] = st
		}
	}
	// root is self or daemon if pid descends from (or is) one of them.
	root := func(pid int) int {
		for range 64 {
			if pid == self || pid == daemon {
				return pid
			}
			st, ok := procs[pid]
			if !ok || st.ppid <= 1 {
				return 0
			}
			pid = st.ppid
		}
		return 0
	}
	var u cpuUse
	for pid, st := range procs {
		switch {
		case pid == self:
			u.Client += st.cpu
		case pid == daemon:
			u.Daemon += st.cpu
		case root(pid) == 0:
		case hasArg(st.args, "demo-upstream") || hasArg(st.args, "-serve-typed-upstream"):
			u.Upstream += st.cpu
		case hasArg(st.args, "mcp"):
			u.Bridge += st.cpu
		}
	}
	return u
}

func hasArg(args []string, a string) bool {
	for _, x := range args[min(1, len(args)):] {
		if x == a {
			return true
		}
	}
	return false
}

// readProcStat parses ppid, utime and stime of /proc/PID/stat and the
// command line.
func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// The command name may hold spaces and parentheses: fields start after
	// the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return procStat{
		ppid: ppid,
		cpu:  time.Duration(ut+st) * time.Second / userHZ,
		args: strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00"),
	}, true
}
