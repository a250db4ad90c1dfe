package api

// Ownership says how the daemon holds its units' process trees, for
// daemon_info: "cgroup" (a cgroup v2 leaf per run) or "fallback" (process
// groups, markers and ancestry tracking), and why.
type Ownership struct {
	Mode   string `json:"mode"`
	Reason string `json:"reason"`
	// Cgroup is the daemon's subtree in cgroup mode.
	Cgroup string `json:"cgroup,omitempty"`
	// Controllers say, in cgroup mode, which resource limits apply
	// (docs/design/resources.md): pids (tasks_max), memory (memory_max, memory_high),
	// cpu (cpu_weight).
	Controllers []Controller `json:"controllers,omitempty"`
}

// Controller is one resource controller of the daemon's subtree.
type Controller struct {
	Name string `json:"name"`
	// Version is "v2" or "v1" (a hybrid layout's v1 hierarchy), "" when
	// the daemon does not have it.
	Version string `json:"version"`
	// Why it is unavailable, or what it cannot do.
	Why string `json:"why,omitempty"`
}
