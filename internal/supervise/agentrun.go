package supervise

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/runs"
)

// AgentRun is what every run of a harness asks of its agent (docs/design/agents.md);
// the adapter named by UnitConfig.Agent turns it into arguments at each
// spawn, after the configured args.
type AgentRun struct {
	// Prompt, or PromptFile (read at every spawn; relative to Dir), is
	// the task. A Job runs it non-interactively and its result is the
	// run's; an interactive run that starts a new conversation has it
	// typed once its agent is first ready (Deps.TypePrompt).
	Prompt, PromptFile string
	Model              string
	Approval           agent.Approval
	MaxTurns           int
	// Job: with a prompt, the agent's print/exec mode.
	Job bool
	// Resume continues the last session on every new run, unless the
	// run was started fresh (RestartFresh).
	Resume bool
}

// agentRunState is the actor's memory of sessions.
type agentRunState struct {
	// fresh: the next spawn starts a new conversation (RestartFresh).
	fresh bool
	// freshFrom: sessions recorded on runs up to this id are not
	// continued (the last fresh start's run).
	freshFrom uint64
}

// RestartFresh is Restart for an agent that resumes its session: the new
// run starts a new conversation, and later runs continue that one.
func (u *Unit) RestartFresh(ctx context.Context, cause runs.Cause) error {
	return u.call(ctx, startCmd{cause: cause, restart: true, fresh: true, reply: make(chan error, 1)})
}

// addAgentArgs appends the adapter's arguments for the run's options to
// cmd (whose Env is built): the prompt (read from its file now), model,
// approval, turn bound, job mode and the session to resume. A failure
// (an unreadable prompt_file) fails the spawn with a message naming it.
func (a *actor) addAgentArgs(p *proc, cmd *exec.Cmd) error {
	r := p.cfg.AgentRun
	if r == (AgentRun{}) || p.cfg.Kind != KindHarness {
		return nil
	}
	ad := agent.MustLookup(p.cfg.Agent)
	prompt := r.Prompt
	if r.PromptFile != "" {
		path := r.PromptFile
		if !filepath.IsAbs(path) && p.cfg.Dir != "" {
			path = filepath.Join(p.cfg.Dir, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("prompt_file: %w", err)
		}
		if prompt = strings.TrimSpace(string(b)); prompt == "" {
			return fmt.Errorf("prompt_file %s: it is empty", path)
		}
	}
	o := agent.RunOptions{Model: r.Model, Approval: r.Approval, MaxTurns: r.MaxTurns, Job: r.Job && prompt != ""}
	fresh := a.ar.fresh
	a.ar.fresh = false
	if fresh {
		a.ar.freshFrom = p.run
	}
	if r.Resume && !fresh {
		id := a.deps.Runs.LastSession(p.cfg.Name, a.ar.freshFrom)
		if id != "" && !agent.ValidSession(id) {
			// The agent's own word: never an option on its command line.
			a.deps.Log.Event(p.run, fmt.Sprintf("not resuming session %q: not a session id", errcode.Clip(id, 80)))
			id = ""
		}
		if id != "" {
			o.ResumeSession = id
		} else if ad.HasSession == nil || ad.HasSession(envLookup(cmd.Env), cmd.Dir) {
			o.Continue = true
		}
	}
	switch {
	case o.Job:
		o.Prompt = prompt
	case prompt != "" && o.ResumeSession == "" && !o.Continue && a.deps.TypePrompt != nil:
		// Typed once the agent is ready, not an argument: the agent
		// starts as an operator would start it. A resumed conversation
		// has had its prompt already.
		a.deps.TypePrompt(p.run, prompt)
	}
	args, err := ad.Args(o)
	if err != nil {
		return err
	}
	cmd.Args = append(cmd.Args, args...)
	if ad.RunEnv != nil {
		cmd.Env = append(cmd.Env, ad.RunEnv(o)...)
	}
	if o.Job && ad.JobResult != nil {
		p.jobOut = &capture{}
	}
	if o.Job && ad.JobRetry != nil {
		p.jobLines = &lineWriter{fn: a.u.agent.jobRetries(p.run, ad.JobRetry)}
	}
	switch {
	case o.ResumeSession != "":
		a.deps.Log.Event(p.run, "resuming session "+o.ResumeSession)
	case o.Continue:
		a.deps.Log.Event(p.run, "continuing the last conversation")
	}
	return nil
}

// envLookup reads KEY=VALUE pairs; the last one of a key wins.
func envLookup(env []string) func(string) string {
	return func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
}

// Bounds of a job's captured output: its head (where an agent names its
// session) and its tail (where it reports its result).
const (
	captureHead = 256 << 10
	captureTail = 4 << 20
)

// capture keeps the head and the tail of a job run's output for its
// adapter's JobResult. The output reader writes it; the waiter reads it.
type capture struct {
	mu        sync.Mutex
	head      []byte
	tail      []byte
	truncated bool
	// moved counts the bytes dropping old ones moved (its test bounds
	// it by the output's size).
	moved int
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if room := captureHead - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	c.tail = append(c.tail, p...)
	// The tail may reach twice its bound before its oldest bytes go:
	// dropping them at every write moved the whole tail for each few
	// KiB the PTY handed over (a thousand times the output's own cost).
	if over := len(c.tail) - captureTail; over > captureTail {
		c.tail = append(c.tail[:0], c.tail[over:]...)
		c.truncated = true
		c.moved += captureTail
	}
	return n, nil
}

func (c *capture) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail, truncated := c.tail, c.truncated
	if over := len(tail) - captureTail; over > 0 {
		tail, truncated = tail[over:], true
	}
	if !truncated {
		return append(append([]byte(nil), c.head...), tail...)
	}
	// The object cut at the seam is lost, not misread: a newline apart.
	return bytes.Join([][]byte{c.head, tail}, []byte("\n"))
}

// teeWriter writes to w and then to c.
type teeWriter struct {
	w io.Writer
	c *capture
}

func (t teeWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	_, _ = t.c.Write(p)
	return n, err
}

// jobEnd is what a job run's output said, read off the actor by the
// waiter.
type jobEnd struct {
	res agent.JobResult
	err error
}

// readJob parses a job run's captured output with its adapter.
func readJob(p *proc) *jobEnd {
	if p.jobOut == nil {
		return nil
	}
	res, err := agent.MustLookup(p.cfg.Agent).JobResult(p.jobOut.bytes())
	return &jobEnd{res: res, err: err}
}

// recordJob puts a job's result on its run and lets it decide the
// outcome where the exit status alone would not: a usage limit is
// limited, an error the agent reported is failed with its message.
func (a *actor) recordJob(p *proc, j *jobEnd, end *runs.Ending) {
	if j == nil {
		return
	}
	if j.err != nil {
		a.deps.Log.Event(p.run, "no job result: "+j.err.Error())
		return
	}
	r := j.res
	if err := a.deps.Runs.SetAgent(p.run, api.RunAgent{SessionID: r.SessionID, Model: r.Model, Tokens: r.Usage,
		CostUSD: r.CostUSD, Result: logs.StripControlLines(r.Result)}); err != nil {
		a.deps.Logger.Error("supervise: record job result", logkey.Run, p.run, logkey.Err, err)
	}
	if end.Outcome != "" {
		return // a timeout or a stop says more
	}
	switch {
	case r.Limited:
		end.Outcome, end.Note = api.RunLimited, clipNote(r.Result)
	case r.IsError:
		end.Outcome, end.Note = api.RunFailed, clipNote(r.Result)
	}
}

// clipNote bounds a note taken from an agent's message, on a character
// boundary, without control sequences (runs prints it to a terminal).
func clipNote(s string) string {
	s = strings.TrimSpace(logs.StripControl(s))
	if len(s) > 300 {
		n := 300
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}

// jobRetries returns what reads each line of run's job output with read:
// once the agent's own retries of a 429 say the run is limited
// (agent.RetryWatch), the agent's state is limited, as a hook would tell
// it, and the harness's on_limit applies long before the job's timeout.
func (t *agentTracker) jobRetries(run uint64, read func([]byte) (agent.Retry, bool)) func([]byte) {
	var w agent.RetryWatch
	return func(line []byte) {
		r, ok := read(line)
		if !ok || !w.Limited(r) {
			return
		}
		t.hook(run, agent.HookSignal{State: api.AgentLimited,
			Message: fmt.Sprintf("API error %d, retried by the agent with waits of %s or more (attempt %d of %d)", r.Status, agent.LimitRetryWait, r.Attempt, r.Max)})
	}
}

// maxJobLine bounds a line lineWriter keeps whole: the lines it is for
// (an agent's retry events) are short, a tool's result may be megabytes.
const maxJobLine = 64 << 10

// lineWriter calls fn with each line written to it, without its CR LF;
// a line longer than maxJobLine is skipped. Only the output reader
// writes it.
type lineWriter struct {
	fn   func([]byte)
	part []byte
	long bool
}

func (l *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !l.long {
				l.part = append(l.part, p...)
				if len(l.part) > maxJobLine {
					l.part, l.long = l.part[:0], true
				}
			}
			break
		}
		if !l.long {
			line := p[:i]
			if len(l.part) > 0 {
				l.part = append(l.part, line...)
				line = l.part
			}
			l.fn(bytes.TrimSuffix(line, []byte("\r")))
		}
		l.part, l.long = l.part[:0], false
		p = p[i+1:]
	}
	return n, nil
}
