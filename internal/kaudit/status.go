package kaudit

import "time"

// Status says whether file refusals are being counted, and if not why.
type Status struct {
	// Counting: the daemon reads audit's records and audit is on (or, when
	// the daemon cannot ask, may be).
	Counting bool
	// Why is what describe says when not counting, or the doubt when
	// counting without knowing whether audit is on; "" otherwise.
	Why string
}

// What describe says (files_denied) when file refusals are not counted.
const (
	// WhyAuditOff: the daemon can read audit, which is off.
	WhyAuditOff = "not counted: the kernel's audit is off, and Landlock tells its denials only to audit (an operator turns it on with `auditctl -e 1`)"
	// WhyUnreadable: reading audit's records needs a capability the daemon lacks.
	WhyUnreadable = "not counted: the kernel tells Landlock denials only to audit, whose records need root (CAP_AUDIT_READ) to read, and audit on (`auditctl -e 1`)"
	// WhyNoAudit: the kernel was built without audit.
	WhyNoAudit = "not counted: the kernel tells Landlock denials only to audit, and this kernel has none (CONFIG_AUDIT)"
	// WhyPidNamespace: the records name pids of the system's first pid
	// namespace, not the daemon's (a container).
	WhyPidNamespace = "not counted: the daemon runs in a pid namespace of its own (a container?), and audit's records name the system's pids"
	// WhyNetNamespace: the kernel multicasts audit's records only to
	// sockets of the system's first network namespace.
	WhyNetNamespace = "not counted: the daemon runs in a network namespace of its own (a container?), and the kernel sends audit's records only to the system's first one"
	// WhyUnknown: the daemon reads the records but cannot ask whether
	// audit is on (no CAP_AUDIT_CONTROL).
	WhyUnknown = "counted only while the kernel's audit is on (`auditctl -e 1`), which the daemon cannot ask without CAP_AUDIT_CONTROL"
	// WhyReadFailed: reading the records failed; the daemon's log says how.
	WhyReadFailed = "not counted: reading the kernel's audit records failed (the daemon's log says why)"
	// WhyClosed: the daemon is stopping.
	WhyClosed = "not counted: the daemon is stopping"
)

// Options configure a Watcher.
type Options struct {
	// Poll is how often audit's status is asked again (an operator may
	// turn it on or off at any time); default 10 s.
	Poll time.Duration
	// Now is the clock of the records kept until their run is known;
	// default time.Now.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.Poll <= 0 {
		o.Poll = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}
