package control

import (
	"context"
	"fmt"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// Events out and in (DESIGN §18): the notifier and the webhook listener
// live in the daemon; control answers notify_test through Notifications,
// shows their counters in daemon_info, and starts a job for a webhook
// delivery (TriggerWebhook).

// Notifications is the notifier (internal/notify) as control reads it.
type Notifications interface {
	Test(ctx context.Context, name string) (api.NotifyTestResult, error)
	Stats() []api.NotifyStats
}

// Webhooks is the webhook listener as daemon_info shows it.
type Webhooks interface {
	Info() *api.WebhookInfo
}

// NotifyTest answers `notify_test`: a sample message through one table.
func (c *Control) NotifyTest(ctx context.Context, a api.NotifyTestArgs) (api.NotifyTestResult, error) {
	if c.opt.Notify == nil {
		return api.NotifyTestResult{}, errcode.Errorf(errcode.InvalidArgument, "no [notify.%s] table: this daemon sends no notifications", errcode.Clip(a.Name, errcode.QuoteMax))
	}
	return c.opt.Notify.Test(ctx, a.Name)
}

func (c *Control) notifyStats() []api.NotifyStats {
	if c.opt.Notify == nil {
		return []api.NotifyStats{}
	}
	return c.opt.Notify.Stats()
}

func (c *Control) webhookInfo() *api.WebhookInfo {
	if c.opt.Webhooks == nil {
		return nil
	}
	return c.opt.Webhooks.Info()
}

// TriggerWebhook starts job name for a webhook delivery, as cause
// webhook, with env (HARNESS_EVENT_FILE) added to that run only. A job
// that is already active is skipped, as a schedule's firing is.
func (c *Control) TriggerWebhook(ctx context.Context, name string, env []string) (api.TriggerResult, error) {
	u, err := c.lookup(name)
	if err != nil {
		return api.TriggerResult{}, err
	}
	if h := u.harness(); h == nil || !h.IsJob() {
		return api.TriggerResult{}, errcode.Errorf(errcode.NotAJob, "%s is not a job", name)
	}
	res := api.TriggerResult{Name: name}
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
