package control

import (
	"context"
	"fmt"
	"strings"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/supervise"
	"github.com/harness-dev/harness/internal/upauth"
)

// OAuth sign-ins of remote upstreams (docs/design/mcp.md). The flow and the token
// store are internal/upauth's; control finds the upstream, starts or
// waits for its sign-in, and reconnects it once tokens are stored or
// deleted.

// MCPLogin answers `mcp_login`: without wait, start a sign-in and answer
// the URL to open; with wait, wait for the one in progress.
func (c *Control) MCPLogin(ctx context.Context, a api.MCPLoginArgs) (api.MCPLoginResult, error) {
	u, up, err := c.oauthUpstream(a.Key)
	if err != nil {
		return api.MCPLoginResult{}, err
	}
	if a.Wait {
		l := c.opt.OAuth.Pending(u.name)
		if l == nil {
			return api.MCPLoginResult{}, errcode.Errorf(errcode.InvalidArgument, "no sign-in of %s in progress: %s", a.Key, upauth.Hint(a.Key))
		}
		if err := l.Wait(ctx); err != nil {
			return api.MCPLoginResult{}, err
		}
		return api.MCPLoginResult{Key: a.Key, State: api.LoginSignedIn}, nil
	}
	vars, err := endpoint.Vars(up.EnvFile, up.Env)
	if err != nil {
		return api.MCPLoginResult{}, fmt.Errorf("upstream %s: %w", a.Key, err)
	}
	target, err := endpoint.Resolve(up.URL, up.Headers, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		return api.MCPLoginResult{}, fmt.Errorf("upstream %s: %v: %w", a.Key, err, errcode.ErrInvalidArgument)
	}
	l, err := c.opt.OAuth.Begin(u.name, a.Key, upauth.LoginConfig{
		URL: target.URL, Header: target.Header, ClientID: up.OAuth.ClientID, Scopes: up.OAuth.Scopes,
		Secrets: target.Secrets,
	}, func(err error) {
		if err != nil {
			c.log.Warn("control: sign-in failed", logkey.Unit, u.name, logkey.Err, err)
			return
		}
		c.log.Info("control: signed in; reconnecting", logkey.Unit, u.name)
		c.reconnect(u)
	})
	if err != nil {
		return api.MCPLoginResult{}, err
	}
	return api.MCPLoginResult{Key: a.Key, State: api.LoginPending, URL: l.URL, Redirect: l.Redirect}, nil
}

// MCPLogout answers `mcp_logout`: the upstream's tokens are deleted and
// its connection ends; it then needs a login.
func (c *Control) MCPLogout(_ context.Context, a api.MCPLogoutArgs) (api.MCPLoginResult, error) {
	u, _, err := c.oauthUpstream(a.Key)
	if err != nil {
		return api.MCPLoginResult{}, err
	}
	if err := c.opt.OAuth.Delete(u.name); err != nil {
		return api.MCPLoginResult{}, err
	}
	c.log.Info("control: signed out; reconnecting", logkey.Unit, u.name)
	c.reconnect(u)
	return api.MCPLoginResult{Key: a.Key, State: api.LoginSignedOut}, nil
}

// reconnect restarts an upstream that is meant to run, so its next
// connection uses the sign-in as it is now; a stopped one stays stopped.
func (c *Control) reconnect(u *unit) {
	if u.sup.Status().State == supervise.StateStopped {
		return
	}
	if err := c.restartUnit(context.Background(), u, api.CauseManual); err != nil {
		c.log.Warn("control: reconnect after a sign-in change", logkey.Unit, u.name, logkey.Err, err)
	}
}

// oauthUpstream finds the upstream KEY or PROJECT/KEY with auth = "oauth".
func (c *Control) oauthUpstream(key string) (*unit, *config.Upstream, error) {
	if key == "" {
		return nil, nil, errcode.Errorf(errcode.InvalidArgument, "an upstream key is required")
	}
	project, k, ok := strings.Cut(key, "/")
	if !ok {
		project, k = "", key
	}
	u, err := c.lookup(UpstreamUnitName(project, k))
	if err != nil || u.kind != supervise.KindUpstream || u.upstream() == nil {
		return nil, nil, errcode.Errorf(errcode.UnknownNamespace, "no upstream %s", errcode.Quote(key))
	}
	up := u.upstream()
	if up.OAuth == nil || c.opt.OAuth == nil {
		return nil, nil, errcode.Errorf(errcode.InvalidArgument, "upstream %s does not sign in with OAuth (set auth = \"oauth\" in [mcp.%s])", key, k)
	}
	return u, up, nil
}

// loginState is the state mcp_status shows for an upstream with auth =
// "oauth" that has no usable sign-in, and why; ok is false otherwise.
func (c *Control) loginState(u *unit, state string) (why string, ok bool) {
	up := u.upstream()
	if up == nil || up.OAuth == nil || c.opt.OAuth == nil || state == string(supervise.StateStopped) {
		return "", false
	}
	needs, why := c.opt.OAuth.NeedsLogin(u.name)
	if !needs {
		return "", false
	}
	name := up.Key
	if up.Project != "" {
		name = up.Project + "/" + up.Key
	}
	return (&upauth.LoginError{Name: name, Why: why}).Error(), true
}
