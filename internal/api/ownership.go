package api

// Ownership says how the daemon holds its units' process trees, for
// daemon_info: "cgroup" (a cgroup v2 leaf per run) or "fallback" (process
// groups, markers and ancestry tracking), and why.
type Ownership struct {
	Mode   string `json:"mode"`
	Reason string `json:"reason"`
	// Cgroup is the daemon's subtree in cgroup mode.
	Cgroup string `json:"cgroup,omitempty"`
}
