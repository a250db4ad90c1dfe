package control

import (
	"context"
	"fmt"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
)

// Events out and in (docs/design/events.md): the notifier and the webhook receiver
// live in the daemon, which hands New their constructors. Control builds
// them on itself before any unit exists (buildEventParts): the notifier
// reads harnesses, runs and logs from it, the receiver starts jobs through
// TriggerWebhook. Control feeds the notifier every event (publish), puts
// each applied configuration's tables and routes in force
// (applyEventConfig), answers notify_test and shows their counters in
// daemon_info.

// Notifier is the notifier (internal/notify) as control drives it.
type Notifier interface {
	// Observe takes one event; it must never block.
	Observe(api.Event)
	// Apply puts the [notify.NAME] tables in force.
	Apply(map[string]*config.Notify)
	Test(ctx context.Context, name string) (api.NotifyTestResult, error)
	Stats() []api.NotifyStats
}

// Webhooks is the webhook receiver (internal/webhook) as control drives it.
type Webhooks interface {
	// Apply puts the [webhook.NAME] routes in force.
	Apply(map[string]*config.Webhook)
	// Info is daemon_info's view.
	Info() *api.WebhookInfo
}

// buildEventParts builds the notifier and the webhook receiver with the
// daemon's constructors. New calls it before any unit exists: no event
// can come before the notifier, and neither part ever holds a nil
// Control. A Control with no configuration applied yet answers them as
// one with no harness would.
func (c *Control) buildEventParts() error {
	if c.opt.NewNotifier != nil {
		c.notifier = c.opt.NewNotifier(c)
	}
	if c.opt.NewWebhooks != nil {
		w, err := c.opt.NewWebhooks(c)
		if err != nil {
			return err // says which key (webhook_listen, ...) already
		}
		c.webhooks = w
	}
	return nil
}

// applyEventConfig puts the configuration in force's notify tables and
// webhook routes in force (at New and after every reload or project
// up/down).
func (c *Control) applyEventConfig() {
	cfg := c.Config()
	if c.notifier != nil {
		c.notifier.Apply(cfg.Notifiers)
	}
	if c.webhooks != nil {
		c.webhooks.Apply(cfg.Webhooks)
	}
}

// reloaded follows a successful reload or project up/down.
func (c *Control) reloaded() {
	c.applyEventConfig()
	if c.opt.OnReload != nil {
		c.opt.OnReload(c.Config())
	}
}

// publish hands an event, once control has handled it, to the daemon
// (OnEvent) and to the notifier, in that order.
func (c *Control) publish(ev api.Event) {
	if c.opt.OnEvent != nil {
		c.opt.OnEvent(ev)
	}
	if c.notifier != nil {
		c.notifier.Observe(ev) // never blocks: a bounded queue
	}
}

// NotifyTest answers `notify_test`: a sample message through one table.
func (c *Control) NotifyTest(ctx context.Context, a api.NotifyTestArgs) (api.NotifyTestResult, error) {
	if c.notifier == nil {
		return api.NotifyTestResult{}, errcode.Errorf(errcode.InvalidArgument, "no [notify.%s] table: this daemon sends no notifications", errcode.Clip(a.Name, errcode.QuoteMax))
	}
	return c.notifier.Test(ctx, a.Name)
}

func (c *Control) notifyStats() []api.NotifyStats {
	if c.notifier == nil {
		return []api.NotifyStats{}
	}
	return c.notifier.Stats()
}

func (c *Control) webhookInfo() *api.WebhookInfo {
	if c.webhooks == nil {
		return nil
	}
	return c.webhooks.Info()
}

// TriggerWebhook starts job name for a webhook delivery, as cause
// webhook, with env (HARNESS_EVENT_FILE) added to that run only. A job
// that is already active is skipped, as a schedule's firing is.
func (c *Control) TriggerWebhook(ctx context.Context, name string, env []string) (res api.TriggerResult, err error) {
	defer func() { c.auditWebhook(name, env, err) }()
	u, err := c.lookup(name)
	if err != nil {
		return api.TriggerResult{}, err
	}
	if h := u.harness(); h == nil || !h.IsJob() {
		return api.TriggerResult{}, errcode.Errorf(errcode.NotAJob, "%s is not a job", name)
	}
	res = api.TriggerResult{Name: name}
	before := u.sup.Status()
	if isActive(before.State) {
		res.Skipped, res.ActiveRun, res.Outcome = true, before.RunID, api.RunSkipped
		c.recordFiring(u, api.CauseWebhook, api.RunSkipped, fmt.Sprintf("run %d was active", before.RunID))
		return res, nil
	}
	// A hold (hours, budget) refuses a webhook's firing like any other.
	if err := c.refuseFiring(u, api.CauseWebhook); err != nil {
		return res, err
	}
	if err := u.sup.StartWith(ctx, api.CauseWebhook, env); err != nil {
		return res, fmt.Errorf("%s: %w", name, err)
	}
	after := u.sup.Status()
	if after.RunID == before.RunID {
		return res, fmt.Errorf("%s did not start a new run (state %s)", name, after.State)
	}
	res.RunID = after.RunID
	return res, nil
}
