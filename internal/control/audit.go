package control

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/supervise"
)

// AuditLog is where control records every state-changing operation
// (internal/audit). Record must not block: it is on the operation's path.
type AuditLog interface {
	Record(api.AuditEntry)
	Read(since time.Time) ([]api.AuditEntry, error)
	Dropped() uint64
}

// audited reports whether op changes state: any op whose class is not
// read (write and input). An op the specs do not know is not run at all.
func audited(op string) bool {
	c, ok := api.ClassOf(op)
	return ok && c != api.Read
}

// auditCall records one operation that Call ran. The entry holds the op,
// the name of what it acted on and the outcome, never an argument's value
// (a prompt, a text typed, a token): target reads only the naming fields.
func (c *Control) auditCall(caller api.Caller, op string, args json.RawMessage, err error) {
	if c.opt.Audit == nil || !audited(op) {
		return
	}
	c.record(caller, op, auditTarget(args), err)
}

// AuditRemote records an operation a door of this daemon sent to another
// machine's daemon (the page acting on a [host.NAME] row): target is
// "HOST:NAME". That host's own log records it too, as its SSH key.
func (c *Control) AuditRemote(caller api.Caller, op, target string, err error) {
	if c.opt.Audit == nil || !audited(op) {
		return
	}
	c.record(caller, op, target, err)
}

func (c *Control) record(caller api.Caller, op, target string, err error) {
	c.opt.Audit.Record(api.AuditEntry{
		Time: time.Now().UTC(), Actor: caller.AuditActor(os.Getuid()), Door: caller.AuditDoor(),
		Op: op, Target: target, Outcome: outcome(err),
	})
}

// AttachFor is Attach for caller, through a door (the socket's attach
// mode, the page's terminal): a viewer that may type is audited as op
// attach, as any input is; a read-only one is a read.
func (c *Control) AttachFor(ctx context.Context, caller api.Caller, a api.AttachArgs) (*supervise.Viewer, error) {
	v, err := c.Attach(ctx, a)
	if !a.ReadOnly && c.opt.Audit != nil {
		c.record(caller, api.OpAttach, a.Name, err)
	}
	return v, err
}

// auditTarget is the name an op's arguments act on: name, names, key,
// project or "all"; nothing else of the arguments is read.
func auditTarget(args json.RawMessage) string {
	var t struct {
		Name    string   `json:"name"`
		Names   []string `json:"names"`
		All     bool     `json:"all"`
		Key     string   `json:"key"`
		Project string   `json:"project"`
	}
	_ = json.Unmarshal(args, &t) // a malformed argument has no target
	names := append([]string{}, t.Names...)
	if t.Name != "" {
		names = append(names, t.Name)
	}
	switch {
	case t.All:
		return "all"
	case len(names) > 0:
		return strings.Join(names, ",")
	case t.Key != "":
		return t.Key
	}
	return t.Project
}

// outcome is "ok", or the error's wire code.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	return string(errcode.Of(err))
}

// auditWebhook records a webhook's firing of a job, which comes in
// through no op; the actor is the webhook the run's env names
// (HARNESS_WEBHOOK).
func (c *Control) auditWebhook(name string, env []string, err error) {
	if c.opt.Audit == nil {
		return
	}
	actor := "webhook"
	for _, kv := range env {
		if hook, ok := strings.CutPrefix(kv, "HARNESS_WEBHOOK="); ok && hook != "" {
			actor = "webhook:" + hook
		}
	}
	c.opt.Audit.Record(api.AuditEntry{
		Time: time.Now().UTC(), Actor: actor, Door: api.DoorWebhook,
		Op: api.OpTrigger, Target: name, Outcome: outcome(err),
	})
}

// Audit answers `audit`: the kept entries, oldest first.
func (c *Control) Audit(_ context.Context, a api.AuditArgs) (api.AuditResult, error) {
	if a.SinceS < 0 || math.IsNaN(a.SinceS) || a.SinceS > float64(math.MaxInt64/int64(time.Second)) {
		return api.AuditResult{}, errcode.Errorf(errcode.InvalidArgument, "since_s must be a number of seconds >= 0")
	}
	if c.opt.Audit == nil {
		return api.AuditResult{Entries: []api.AuditEntry{}}, nil
	}
	var since time.Time
	if a.SinceS > 0 {
		since = time.Now().Add(-time.Duration(a.SinceS * float64(time.Second)))
	}
	es, err := c.opt.Audit.Read(since)
	if err != nil {
		return api.AuditResult{}, err
	}
	return api.AuditResult{Entries: es, Dropped: c.opt.Audit.Dropped()}, nil
}
