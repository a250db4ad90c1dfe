// Package errcode defines the stable error codes of the control plane and
// one sentinel error per code. Every layer wraps errors with context
// (fmt.Errorf("broker: upstream %s: %w", key, err)); the code survives the
// wrapping and is what reaches the wire, the CLI's --json output and MCP
// tool results.
package errcode

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Code is a stable, wire-visible error code.
type Code string

// The wire's codes (docs/design/wire.md), for Errorf and switches. They never change
// meaning once shipped. A constant here needs its sentinel below
// (TestEveryCodeConstantHasASentinel); a new code needs no constant: its
// define line is enough (use ErrX.Errorf).
const (
	UnknownHarness      Code = "unknown_harness"
	NotPermitted        Code = "not_permitted"
	UnknownTool         Code = "unknown_tool"
	UnknownNamespace    Code = "unknown_namespace"
	UpstreamUnavailable Code = "upstream_unavailable"
	InvalidArgument     Code = "invalid_argument"
	ConfigInvalid       Code = "config_invalid"
	NotAJob             Code = "not_a_job"
	DaemonUnavailable   Code = "daemon_unavailable"
	VersionMismatch     Code = "version_mismatch"
	NotRunning          Code = "not_running"
	// NotWaiting: an answer to a harness whose agent is not waiting on a
	// prompt (docs/design/agents.md).
	NotWaiting Code = "not_waiting"
	// Held: a hold refuses the start (docs/design/agents.md); the message names the
	// reason and until when.
	Held Code = "held"
	// Busy: a harness's terminal is not taking input (a send waited its
	// whole deadline, or too many sends already wait); retry later.
	Busy Code = "busy"
	// RateLimited: a call over a rate limit (ErrRateLimited).
	RateLimited Code = "rate_limited"
	Internal    Code = "internal"
)

// Sentinel is the error type behind every sentinel below. Compare with
// errors.Is against the package variables, never by message.
type Sentinel struct{ code Code }

func (s *Sentinel) Error() string { return string(s.code) }

// Code returns the wire code of the sentinel.
func (s *Sentinel) Code() Code { return s.code }

// Errorf wraps s with a formatted message, like the package's Errorf.
func (s *Sentinel) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), s)
}

// One sentinel per wire code. A new code is one line here: define
// registers it (SentinelFor, Codes), and the package's tests hold it to
// the lists of docs/operations.md and docs/design/wire.md.
var (
	ErrUnknownHarness      = define(UnknownHarness)
	ErrNotPermitted        = define(NotPermitted)
	ErrUnknownTool         = define(UnknownTool)
	ErrUnknownNamespace    = define(UnknownNamespace)
	ErrUpstreamUnavailable = define(UpstreamUnavailable)
	ErrInvalidArgument     = define(InvalidArgument)
	ErrConfigInvalid       = define(ConfigInvalid)
	ErrNotAJob             = define(NotAJob)
	ErrDaemonUnavailable   = define(DaemonUnavailable)
	ErrVersionMismatch     = define(VersionMismatch)
	ErrNotRunning          = define(NotRunning)
	ErrNotWaiting          = define(NotWaiting)
	ErrHeld                = define(Held)
	ErrBusy                = define(Busy)
	// ErrToolQuarantined: an upstream tool changed since it was pinned
	// and waits for `harness mcp approve` (docs/gateway.md).
	ErrToolQuarantined = define("tool_quarantined")
	// ErrRateLimited: a call over an upstream's, a tool's or a harness's
	// rate; the message says when to retry (retry_after_ms).
	ErrRateLimited = define(RateLimited)
	// ErrNotFound: a named thing that does not exist, the message listing
	// what does (an approve of a tool that is not quarantined).
	ErrNotFound = define("not_found")
	ErrInternal = define(Internal)
	// ErrSetupFailed: a harness's worktree setup failed, so its start
	// spawned nothing; the message has the setup's last lines.
	ErrSetupFailed = define("setup_failed")
	// ErrConflict: a land would conflict; the message lists the files,
	// and nothing was changed.
	ErrConflict = define("conflict")
)

var (
	byCode = map[Code]*Sentinel{}
	codes  []Code // in definition order
)

// define registers the sentinel of code c; a code defined twice is a
// programming error.
func define(c Code) *Sentinel {
	if _, dup := byCode[c]; dup {
		panic("errcode: code " + string(c) + " defined twice")
	}
	s := &Sentinel{code: c}
	byCode[c] = s
	codes = append(codes, c)
	return s
}

// Codes lists every defined code, in definition order.
func Codes() []Code { return append([]Code(nil), codes...) }

// Sentinel returns the sentinel for a code; unknown codes map to ErrInternal.
func SentinelFor(c Code) *Sentinel {
	if s, ok := byCode[c]; ok {
		return s
	}
	return ErrInternal
}

// Of returns the code carried by err, or Internal when err carries none.
// A nil error has no code and returns "".
func Of(err error) Code {
	if err == nil {
		return ""
	}
	var s *Sentinel
	if errors.As(err, &s) {
		return s.code
	}
	var r *Remote
	if errors.As(err, &r) {
		return r.Code
	}
	return Internal
}

// Errorf wraps the sentinel of code c with a formatted message:
// Errorf(UnknownHarness, "harness %q", name) reads
// `harness "x": unknown_harness` and errors.Is it ErrUnknownHarness.
func Errorf(c Code, format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), SentinelFor(c))
}

// Remote is an error received from the other end of the wire: the code and
// message as the daemon sent them. It errors.Is the sentinel of its code.
type Remote struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

func (r *Remote) Error() string { return r.Message }

// Is makes errors.Is(remote, ErrX) true when the codes match.
func (r *Remote) Is(target error) bool {
	s, ok := target.(*Sentinel)
	return ok && s.code == r.Code
}

// Body is the JSON shape of an error on the wire, in --json output and in
// MCP error results: {"code": ..., "message": ...}.
type Body struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// RetryAfterMS is when a rate_limited call may be retried, in
	// milliseconds (RetryAfter); absent otherwise.
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
}

// BodyOf renders err for the wire: its code, its message without the
// code word (Message), and when to retry if it says so (RetryAfter).
func BodyOf(err error) Body {
	b := Body{Code: Of(err), Message: Message(err)}
	var ra *RetryAfter
	if errors.As(err, &ra) {
		b.RetryAfterMS = max(ra.After.Milliseconds(), 1)
	}
	return b
}

// RetryAfter is an error that says when the same call may succeed: a
// rate limit's refusal. It carries its code through Err.
type RetryAfter struct {
	After time.Duration
	Err   error
}

func (r *RetryAfter) Error() string { return r.Err.Error() }

// Unwrap exposes Err and with it the code.
func (r *RetryAfter) Unwrap() error { return r.Err }

// Message is err's text without the code word its sentinel puts at the
// end (`no harness named "x": unknown_harness` reads `no harness named
// "x"`): the code has a field of its own wherever a message goes. A bare
// sentinel keeps its code, the only thing it says.
func Message(err error) string {
	msg := err.Error()
	if c := Of(err); c != "" {
		if m, ok := strings.CutSuffix(msg, ": "+string(c)); ok && m != "" {
			return m
		}
	}
	return msg
}

// QuoteMax is how many bytes of a caller's value an error message echoes.
const QuoteMax = 64

// Quote renders a caller-supplied value for an error message: quoted like
// %q, and cut to QuoteMax bytes with its full size said, so that an error
// about a huge argument never carries (and multiplies) the argument.
func Quote(s string) string {
	if len(s) <= QuoteMax {
		return strconv.Quote(s)
	}
	cut := QuoteMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// Clip bounds a message built from caller input (a schema validator's
// text quoting the offending value) to max bytes, saying how much was cut.
func Clip(msg string, max int) string {
	if len(msg) <= max {
		return msg
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", msg[:cut], len(msg)-cut)
}
