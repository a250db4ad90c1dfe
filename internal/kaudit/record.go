// Package kaudit follows the kernel's audit records of Landlock denials
// (docs/design/sandbox.md, "Counting file refusals"): a sandboxed run's
// file refusals are known to the kernel only, which tells them to the
// audit subsystem when audit is on. The daemon joins audit's read-only
// multicast group (AUDIT_NLGRP_READLOG), parses the Landlock records and
// hands each denial to the run whose main process created the denying
// domain: the sandbox shim calls landlock_restrict_self and then execs
// the program in place, so the domain's pid is the run's.
//
// It only reads. Turning audit on, and which records it keeps, is the
// system's policy (`auditctl -e 1`), never the daemon's.
package kaudit

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Audit record types (include/uapi/linux/audit.h).
const (
	// TypeLandlockAccess is a denied access: "domain=ID blockers=… path=…".
	TypeLandlockAccess = 1423
	// TypeLandlockDomain is a domain's life: "domain=ID status=allocated
	// mode=enforcing pid=PID uid=… exe=… comm=…", logged with its first
	// logged denial, and "domain=ID status=deallocated denials=N".
	TypeLandlockDomain = 1424
)

// Access is one denial, as a TypeLandlockAccess record tells it.
type Access struct {
	Domain uint64
	// Blockers are the missing rights ("fs.read_file", "fs.make_reg").
	Blockers []string
	// Path is the object refused: the file, or for a creation or removal
	// the directory it would happen in (the kernel's granularity); ""
	// when the record names none.
	Path string
	Time time.Time
}

// Domain is a TypeLandlockDomain record.
type Domain struct {
	ID uint64
	// Allocated: status=allocated (PID and Exe are set); otherwise the
	// domain was deallocated and is never seen again.
	Allocated bool
	PID       int
	Exe       string
	Time      time.Time
}

// message is one netlink message: its type and text.
type message struct {
	typ  uint16
	text string
}

const nlmsgHdrLen = 16

// splitMessages cuts a datagram read from the audit socket into its
// netlink messages. The kernel's audit messages carry their length
// unpadded, which syscall.ParseNetlinkMessage refuses; a length beyond
// the datagram takes the rest.
func splitMessages(b []byte) []message {
	var out []message
	for len(b) >= nlmsgHdrLen {
		l := int(binary.NativeEndian.Uint32(b[0:4]))
		typ := binary.NativeEndian.Uint16(b[4:6])
		if l < nlmsgHdrLen || l > len(b) {
			l = len(b)
		}
		out = append(out, message{typ: typ, text: strings.TrimRight(string(b[nlmsgHdrLen:l]), "\x00\n")})
		next := (l + 3) &^ 3
		if next >= len(b) {
			break
		}
		b = b[next:]
	}
	return out
}

// fields splits a record's text, "audit(SEC.MS:SERIAL): k=v k=\"v\" …",
// into its time and fields. Values are raw: quoted strings keep their
// quotes (untrusted strings are quoted or hex; untrusted decodes them).
func fields(text string) (time.Time, map[string]string, error) {
	rest, ok := strings.CutPrefix(text, "audit(")
	if !ok {
		return time.Time{}, nil, errors.New("no audit( prefix")
	}
	stamp, rest, ok := strings.Cut(rest, "): ")
	if !ok {
		return time.Time{}, nil, errors.New("no timestamp")
	}
	stamp, _, _ = strings.Cut(stamp, ":")
	sec, ms, _ := strings.Cut(stamp, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("timestamp %q: %w", stamp, err)
	}
	m, _ := strconv.ParseInt(ms, 10, 64)
	t := time.Unix(s, m*int64(time.Millisecond))
	kv := map[string]string{}
	for rest != "" {
		rest = strings.TrimLeft(rest, " ")
		k, after, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		var v string
		if strings.HasPrefix(after, `"`) {
			// Quoted: the kernel quotes only strings without a '"'.
			end := strings.IndexByte(after[1:], '"')
			if end < 0 {
				v, rest = after, ""
			} else {
				v, rest = after[:end+2], after[end+2:]
			}
		} else {
			v, rest, _ = strings.Cut(after, " ")
		}
		if _, dup := kv[k]; !dup {
			kv[k] = v
		}
	}
	return t, kv, nil
}

// untrusted decodes a value the kernel logged with
// audit_log_untrustedstring: quoted when it holds only printable
// characters other than '"' and space, else as upper-case hex.
func untrusted(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return v[1 : len(v)-1]
	}
	if len(v) > 0 && len(v)%2 == 0 && strings.ToUpper(v) == v {
		if b, err := hex.DecodeString(v); err == nil {
			return string(b)
		}
	}
	return v
}

// ParseAccess parses a TypeLandlockAccess record's text.
func ParseAccess(text string) (Access, error) {
	t, kv, err := fields(text)
	if err != nil {
		return Access{}, err
	}
	id, err := strconv.ParseUint(kv["domain"], 16, 64)
	if err != nil {
		return Access{}, fmt.Errorf("landlock access: domain %q: %w", kv["domain"], err)
	}
	a := Access{Domain: id, Time: t}
	if b := kv["blockers"]; b != "" {
		a.Blockers = strings.Split(b, ",")
	}
	// A path (LSM_AUDIT_DATA_PATH, _FILE, _IOCTL_OP) or, for a dentry
	// only (a link's or rename's source), its name.
	if p, ok := kv["path"]; ok {
		a.Path = untrusted(p)
	} else if n, ok := kv["name"]; ok {
		a.Path = untrusted(n)
	}
	return a, nil
}

// ParseDomain parses a TypeLandlockDomain record's text.
func ParseDomain(text string) (Domain, error) {
	t, kv, err := fields(text)
	if err != nil {
		return Domain{}, err
	}
	id, err := strconv.ParseUint(kv["domain"], 16, 64)
	if err != nil {
		return Domain{}, fmt.Errorf("landlock domain: domain %q: %w", kv["domain"], err)
	}
	d := Domain{ID: id, Time: t}
	switch kv["status"] {
	case "allocated":
		d.Allocated = true
		pid, err := strconv.Atoi(kv["pid"])
		if err != nil {
			return Domain{}, fmt.Errorf("landlock domain: pid %q: %w", kv["pid"], err)
		}
		d.PID = pid
		d.Exe = untrusted(kv["exe"])
	case "deallocated":
	default:
		return Domain{}, fmt.Errorf("landlock domain: status %q", kv["status"])
	}
	return d, nil
}
