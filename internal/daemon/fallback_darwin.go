package daemon

// fallbackNote follows the reason daemon_info gives for the fallback mode
// on macOS, where it is the only mode: what else Linux has that macOS
// lacks, and what stands in for it.
const fallbackNote = "; so no resource limits (tasks_max, memory_max, memory_high, cpu_weight are not applied)." +
	" macOS has no parent-death signal and no child subreaper either: units are held by process group" +
	" and their HARNESS_TREE marker, and a crashed daemon's units are ended from its ledger at the next start"
