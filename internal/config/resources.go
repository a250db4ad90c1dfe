package config

import (
	"math"
	"strconv"
	"strings"
)

// Resource limits of a unit's runs (docs/design/resources.md), applied in cgroup mode
// to each run's cgroup.
const (
	// DefaultTasksMax is tasks_max: what systemd gives a service, so a
	// fork bomb stops at its own limit, not at the machine's.
	DefaultTasksMax = 4096
	// MaxCPUWeight bounds cpu_weight (cgroup v2's cpu.weight range).
	MaxCPUWeight = 10000
)

// Resources are the limits of one unit. A zero field is no limit.
type Resources struct {
	TasksMax   int   // tasks_max: processes and threads; 0 = none
	MemoryMax  int64 // memory_max in bytes: past it the OOM killer ends the run
	MemoryHigh int64 // memory_high in bytes: past it the run is throttled
	CPUWeight  int   // cpu_weight 1..10000; 0 = the kernel's default (100)
}

// resourceKey decodes one of the resource keys into r and reports whether
// k was one of them.
func (d *decoder) resourceKey(k string, kp []string, val any, r *Resources) bool {
	switch k {
	case "tasks_max":
		n, ok := val.(int64)
		if !ok || n < 0 || n > math.MaxInt32 {
			d.add(kp, "must be a whole number >= 0 (0 = no limit), not %s", shown(val))
			return true
		}
		r.TasksMax = int(n)
	case "memory_max":
		r.MemoryMax = d.size(kp, val)
	case "memory_high":
		r.MemoryHigh = d.size(kp, val)
	case "cpu_weight":
		n, ok := val.(int64)
		if !ok || n < 1 || n > MaxCPUWeight {
			d.add(kp, "must be a whole number from 1 to %d, not %s", MaxCPUWeight, shown(val))
			return true
		}
		r.CPUWeight = int(n)
	default:
		return false
	}
	return true
}

// checkResources reports limits that contradict each other.
func (d *decoder) checkResources(path []string, r Resources) {
	if r.MemoryMax > 0 && r.MemoryHigh > r.MemoryMax {
		d.add(child(path, "memory_high"), "%d bytes is above memory_max (%d bytes): it would never throttle", r.MemoryHigh, r.MemoryMax)
	}
}

// size decodes a memory size: a number of bytes, or a string of digits
// with an optional K, M, G or T suffix (powers of 1024, "B" and "iB"
// allowed: "512M", "2G", "1GiB").
func (d *decoder) size(path []string, v any) int64 {
	switch x := v.(type) {
	case int64:
		if x <= 0 {
			d.add(path, "must be a size above 0 (bytes, or like \"512M\", \"2G\"), not %d", x)
			return 0
		}
		return x
	case string:
		n, ok := ParseSize(x)
		if !ok {
			d.add(path, "invalid size %q: use bytes, or digits with K, M, G or T (\"512M\", \"2G\")", x)
			return 0
		}
		return n
	}
	d.add(path, "must be a size (bytes, or like \"512M\", \"2G\"), not %s", tomlType(v))
	return 0
}

// ParseSize parses "512M", "2G", "1GiB", "4096" (bytes); the number must
// be above 0.
func ParseSize(s string) (int64, bool) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		case 'T', 't':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, false
	}
	return n * mult, true
}

// shown is a TOML value as an error may show it.
func shown(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return strconv.Quote(x)
	}
	return tomlType(v)
}
