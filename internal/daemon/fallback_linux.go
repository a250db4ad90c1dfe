package daemon

// fallbackNote follows the reason daemon_info gives when no cgroup can be
// had; on Linux the reason says it all.
const fallbackNote = ""
