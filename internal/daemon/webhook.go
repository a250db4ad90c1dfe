package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/webhook"
)

// webhookListener is the listener of [daemon] webhook_listen
// (docs/design/events.md): its own port, never the MCP door; TLS when a certificate is set
// (config refuses a non-loopback address without one). Its address is
// taken at start; control puts the routes in force at start and after
// every reload (control.Webhooks).
type webhookListener struct {
	hooks *webhook.Server
	ln    net.Listener
	srv   *http.Server
	url   string
	err   chan error
	once  sync.Once
}

// newWebhooks builds the receiver on control (its jobs' trigger) and binds
// its listener; serve starts serving it. control.New calls it (through
// Options.NewWebhooks) before any unit exists, which is why it must not
// serve yet.
func newWebhooks(d config.Daemon, stateDir string, ctl *control.Control, runStore *runs.Store, log *slog.Logger) (*webhookListener, error) {
	hooks, err := webhook.New(webhook.Options{
		Dir:     filepath.Join(stateDir, "webhooks"),
		Trigger: ctl.TriggerWebhook,
		RunKept: func(run uint64) bool { _, ok := runStore.Get(run); return ok },
		Logger:  log,
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	ln, err := net.Listen("tcp", d.WebhookListen)
	if err != nil {
		hooks.Close()
		return nil, fmt.Errorf("webhook_listen: %w", err)
	}
	scheme := "http"
	if d.WebhookTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(d.WebhookTLSCert, d.WebhookTLSKey)
		if err != nil {
			ln.Close()
			hooks.Close()
			return nil, fmt.Errorf("webhook_tls_cert/key: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	return &webhookListener{hooks: hooks, ln: ln, url: scheme + "://" + ln.Addr().String(), err: make(chan error, 1),
		srv: &http.Server{Handler: hooks, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
			WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}}, nil
}

// serve serves the listener; the channel reports a failure to serve.
func (w *webhookListener) serve(log *slog.Logger) chan error {
	go func() {
		if err := w.srv.Serve(w.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.err <- err
		}
	}()
	log.Info("webhook listener serving", logkey.URL, w.url)
	return w.err
}

// Apply puts the routes in force (control.Webhooks).
func (w *webhookListener) Apply(hooks map[string]*config.Webhook) { w.hooks.Apply(hooks) }

// Info is daemon_info's view (control.Webhooks).
func (w *webhookListener) Info() *api.WebhookInfo {
	return &api.WebhookInfo{URL: w.url, Routes: w.hooks.Stats()}
}

func (w *webhookListener) close(ctx context.Context) {
	w.once.Do(func() {
		w.srv.Shutdown(ctx)
		w.ln.Close() // when it was never served, Shutdown does not know it
		w.hooks.Close()
	})
}
