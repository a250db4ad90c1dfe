//go:build linux

package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Locate finds the calling process's cgroup v2 directory from
// /proc/self/cgroup (the "0::PATH" line) and /proc/self/mountinfo (a
// cgroup2 mount whose root holds PATH). It works on unified and hybrid
// layouts alike: on a hybrid one the v1 controllers sit beside a cgroup2
// mount such as /sys/fs/cgroup/unified.
func Locate() (Location, error) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Location{}, fmt.Errorf("cgroup: locate: %w", err)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Location{}, fmt.Errorf("cgroup: locate: %w", err)
	}
	return locate(cg, mi)
}

// errNoV2 says the process has no place in a cgroup v2 hierarchy.
var errNoV2 = errors.New("no cgroup v2 hierarchy")

func locate(procCgroup, mountinfo []byte) (Location, error) {
	path, ok := v2Path(procCgroup)
	if !ok {
		return Location{}, fmt.Errorf("cgroup: locate: %w: /proc/self/cgroup has no 0:: line", errNoV2)
	}
	// A path outside the cgroup namespace's root reads "/../...": it
	// cannot be reached through any mount this process sees.
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "/../") || strings.HasSuffix(path, "/..") {
		return Location{}, fmt.Errorf("cgroup: locate: own cgroup %q lies outside this namespace", path)
	}
	mounts := cgroup2Mounts(mountinfo)
	if len(mounts) == 0 {
		return Location{}, fmt.Errorf("cgroup: locate: %w mounted", errNoV2)
	}
	for _, m := range mounts {
		rel, ok := under(path, m.root)
		if !ok {
			continue
		}
		return Location{Mount: m.point, Path: rel}, nil
	}
	return Location{}, fmt.Errorf("cgroup: locate: no cgroup2 mount holds own cgroup %q", path)
}

// v2Path returns the path of the "0::" line of /proc/PID/cgroup.
func v2Path(procCgroup []byte) (string, bool) {
	for line := range bytes.Lines(procCgroup) {
		if p, ok := bytes.CutPrefix(bytes.TrimRight(line, "\n"), []byte("0::")); ok {
			return string(p), true
		}
	}
	return "", false
}

type mount struct{ root, point string }

// cgroup2Mounts lists the cgroup2 mounts of a mountinfo file: fields are
// "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE ...".
func cgroup2Mounts(mountinfo []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+1 >= len(f) || f[sep+1] != "cgroup2" {
			continue
		}
		out = append(out, mount{root: unescapeMount(f[3]), point: unescapeMount(f[4])})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// under returns path relative to root ("/" when equal) if root holds it.
func under(path, root string) (string, bool) {
	if root == "/" {
		return path, true
	}
	if path == root {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(path, root); ok && strings.HasPrefix(rest, "/") {
		return rest, true
	}
	return "", false
}
