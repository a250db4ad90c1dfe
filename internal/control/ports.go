package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/harness-dev/harness/internal/logkey"
)

// Ports of a harness (ports = N, docs/worktrees.md): N free TCP ports
// picked once, kept in the state dir so that every run, restart and
// daemon restart gets the same ones, and never given to two harnesses.

// portsFile is the book of ports in the state dir.
const portsFile = "ports.json"

// portBook is every harness's ports, by unit name.
type portBook struct {
	mu     sync.Mutex
	loaded bool
	byName map[string][]int
}

// portEnv is the environment giving name its n ports: HARNESS_PORT (the
// first) and HARNESS_PORTS (all, comma-separated); nil for n = 0.
func (c *Control) portEnv(name string, n int) []string {
	if n <= 0 {
		return nil
	}
	ports := c.portsFor(name, n)
	if len(ports) == 0 {
		return nil
	}
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return []string{"HARNESS_PORT=" + s[0], "HARNESS_PORTS=" + strings.Join(s, ",")}
}

// portsFor is name's n ports: the ones it has, more picked if it needs
// more, the book written when it changed.
func (c *Control) portsFor(name string, n int) []int {
	b := &c.ports
	b.mu.Lock()
	defer b.mu.Unlock()
	path := c.loadPortsLocked()
	have := b.byName[name]
	if len(have) >= n {
		return slices.Clone(have[:n])
	}
	taken := map[int]bool{}
	for _, ps := range b.byName {
		for _, p := range ps {
			taken[p] = true
		}
	}
	for len(have) < n {
		p, err := freePort(taken)
		if err != nil {
			c.log.Error("ports: no free port", logkey.Unit, name, logkey.Err, err)
			break
		}
		taken[p] = true
		have = append(have, p)
	}
	b.byName[name] = have
	if err := writeJSONFile(path, b.byName); err != nil {
		c.log.Error("ports: write", logkey.Path, path, logkey.Err, err)
	}
	return slices.Clone(have)
}

// loadPortsLocked reads the book from the state dir the first time, and
// returns its path. The caller holds c.ports.mu.
func (c *Control) loadPortsLocked() string {
	b := &c.ports
	path := filepath.Join(c.opt.Paths.StateDir, portsFile)
	if b.loaded {
		return path
	}
	b.loaded = true
	b.byName = map[string][]int{}
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &b.byName); err != nil {
			c.log.Warn("ports: unreadable book, picking anew", logkey.Path, path, logkey.Err, err)
			b.byName = map[string][]int{}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		c.log.Warn("ports: read", logkey.Path, path, logkey.Err, err)
	}
	return path
}

// releasePorts forgets name's ports (harness rm): a harness made again
// under the name picks new ones, and the book does not grow with every
// harness that ever was.
func (c *Control) releasePorts(name string) {
	b := &c.ports
	b.mu.Lock()
	defer b.mu.Unlock()
	path := c.loadPortsLocked()
	if _, ok := b.byName[name]; !ok {
		return
	}
	delete(b.byName, name)
	if err := writeJSONFile(path, b.byName); err != nil {
		c.log.Error("ports: write", logkey.Path, path, logkey.Err, err)
	}
}

// freePort asks the kernel for a free loopback TCP port not in taken.
func freePort(taken map[int]bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !taken[p] {
			return p, nil
		}
	}
	return 0, fmt.Errorf("every port the kernel offered is taken")
}

// writeJSONFile writes v to path through a temporary file and a rename,
// so a crash leaves the old file or the new one.
func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
