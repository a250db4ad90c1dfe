package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/proctree"
)

// Retry policy of a delivery: up to MaxAttempts tries, the delays between
// them doubling from BaseBackoff, each capped at MaxBackoff (a receiver's
// Retry-After is honoured up to that cap).
const (
	MaxAttempts = 4
	BaseBackoff = 500 * time.Millisecond
	MaxBackoff  = 30 * time.Second
)

// outcome is what one try of a delivery came to.
type outcome struct {
	status     int           // HTTP status; 0 for a command or no answer
	err        error         // nil when delivered
	retry      bool          // worth another try
	retryAfter time.Duration // the receiver asked to wait this long
}

// Retryable is the retry policy as a pure function of one try's HTTP
// status (0 when there was no answer: a timeout or a connection error):
// no answer, 5xx, 408 and 429 are tried again; any other 4xx (the request
// itself is wrong: a bad token, a gone webhook) never is.
func Retryable(status int) bool {
	switch {
	case status == 0, status >= 500, status == http.StatusRequestTimeout, status == http.StatusTooManyRequests:
		return true
	}
	return false
}

// Backoff is the wait before try attempt+1 (attempt counts from 1).
func Backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := BaseBackoff << (attempt - 1)
	if retryAfter > d {
		d = retryAfter
	}
	return min(d, MaxBackoff)
}

// sink delivers messages of one [notify.NAME] table.
type sink struct {
	cfg    *config.Notify
	client *http.Client
	reaper Reaper
	own    *ownership
	logger *slog.Logger
}

// kind is how stats show the sink: "command" or the url's format.
func (s *sink) kind() string {
	if len(s.cfg.Command) > 0 {
		return "command"
	}
	return s.cfg.Format
}

// try makes one attempt to deliver m.
func (s *sink) try(ctx context.Context, m *Message) outcome {
	if len(s.cfg.Command) > 0 {
		return s.runCommand(ctx, m)
	}
	return s.post(ctx, m)
}

// vars are the table's variables, read at each delivery so a rotated
// env_file is picked up.
func (s *sink) vars() (map[string]string, error) {
	return endpoint.Vars(s.cfg.EnvFile, s.cfg.Env)
}

func (s *sink) post(ctx context.Context, m *Message) outcome {
	vars, err := s.vars()
	if err != nil {
		return outcome{err: err} // the operator must fix the file: no retry
	}
	t, err := endpoint.Resolve(s.cfg.URL, s.cfg.Headers, func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	})
	if err != nil {
		return outcome{err: err}
	}
	scrub := endpoint.Scrub(t.Secrets)
	body, ctype, extra, err := Render(s.cfg.Format, m)
	if err != nil {
		return outcome{err: fmt.Errorf("render: %w", err)}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return outcome{err: errors.New(scrub(err.Error()))}
	}
	for k, vs := range t.Header {
		req.Header[k] = vs
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "harness-notify")
	resp, err := s.client.Do(req)
	if err != nil {
		// The error quotes the URL, which may carry a credential.
		return outcome{err: fmt.Errorf("post %s: %s", endpoint.Redact(t.URL), scrub(rootCause(err))), retry: true}
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return outcome{status: resp.StatusCode}
	}
	o := outcome{status: resp.StatusCode, retry: Retryable(resp.StatusCode),
		err: fmt.Errorf("%s answered %s: %s", endpoint.Redact(t.URL), resp.Status, scrub(oneLine(string(snippet), 200)))}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		o.retryAfter = time.Duration(secs) * time.Second
	}
	return o
}

// rootCause is the innermost error's text: a *url.Error repeats the URL.
func rootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		if _, multi := u.(interface{ Unwrap() []error }); multi {
			return u.Error()
		}
		err = u
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	return clip(s, n)
}

// Reaper registers the processes the daemon starts, so its orphan reaper
// never takes their exit status (proctree.Reaper).
type Reaper interface {
	Spawn(start func() (pid int, err error)) (int, error)
	Release(pid int)
}

// runCommand runs the sink's argv without a shell, m as JSON on stdin, in
// a process group of its own and the daemon's ownership (a cgroup leaf, or
// a tree marker), all of which is killed at the timeout and once the
// command is done, so nothing it started outlives the delivery.
func (s *sink) runCommand(ctx context.Context, m *Message) outcome {
	vars, err := s.vars()
	if err != nil {
		return outcome{err: err}
	}
	body, _, _, err := Render(config.FormatJSON, m)
	if err != nil {
		return outcome{err: fmt.Errorf("render: %w", err)}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	// The context's cancel kills the main process through its pidfd (safe
	// whatever happened to its pid); the group is handled below.
	cmd := exec.CommandContext(ctx, s.cfg.Command[0], s.cfg.Command[1:]...)
	cmd.Env = os.Environ()
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = bytes.NewReader(body)
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = commandAttrs()
	// A descendant holding the output pipe must not hold Wait up either.
	cmd.WaitDelay = time.Second
	hold, err := s.own.place(s.cfg.Name, cmd)
	if err != nil {
		return outcome{err: err}
	}
	start := func() (int, error) {
		if err := hold.start(cmd.Start); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}
	var pid int
	if s.reaper != nil {
		pid, err = s.reaper.Spawn(start)
	} else {
		pid, err = start()
	}
	if err != nil {
		return outcome{err: fmt.Errorf("command: %w", err)}
	}
	// Wait for the exit without reaping: until Wait reaps it, the main
	// process is a zombie whose id still names its group, so the group kills
	// below cannot reach a stranger that reused the number (pid_max may be
	// 32768, and this daemon may run as root).
	exited := make(chan error, 1)
	go func() { exited <- proctree.WaitExit(pid) }()
	var xerr error
	timedOut := false
	select {
	case xerr = <-exited:
	case <-ctx.Done():
		timedOut = true
		syscall.Kill(-pid, syscall.SIGKILL)
		xerr = <-exited
	}
	if xerr == nil {
		syscall.Kill(-pid, syscall.SIGKILL) // what it left behind in its group
	} else {
		s.logger.Warn("notify: command sink: cannot wait without reaping; what it left in its group is not ended",
			logkey.Notifier, s.cfg.Name, logkey.PID, pid, logkey.Err, xerr)
	}
	// What left the group (setsid) is still in the hold.
	if err := hold.end(); err != nil {
		s.logger.Error("notify: command sink: leftovers", logkey.Notifier, s.cfg.Name, logkey.Err, err)
	}
	werr := cmd.Wait()
	if s.reaper != nil {
		s.reaper.Release(pid)
	}
	switch {
	case timedOut && ctx.Err() == context.DeadlineExceeded:
		return outcome{err: fmt.Errorf("command %s killed after %s", s.cfg.Command[0], s.cfg.Timeout), retry: true}
	case timedOut:
		return outcome{err: ctx.Err()}
	case werr != nil:
		// Its output may echo what the env_file gave it.
		secrets := make([]string, 0, len(vars))
		for _, v := range vars {
			secrets = append(secrets, v)
		}
		said := endpoint.Scrub(secrets)(oneLine(out.String(), 200))
		return outcome{err: fmt.Errorf("command %s: %v: %s", s.cfg.Command[0], werr, said), retry: true}
	}
	return outcome{}
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 4096; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
