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

// webhookListener is the listener of [daemon] webhook_listen (DESIGN
// §18): its own port, never the MCP door; TLS when a certificate is set
// (config refuses a non-loopback address without one). Its address is
// taken at start; the routes follow every reload.
type webhookListener struct {
	hooks *webhook.Server
	srv   *http.Server
	url   string
	err   chan error
	once  sync.Once
}

// startWebhooks binds and serves the listener, or returns nil when
// webhook_listen is unset.
func startWebhooks(cfg *config.Config, stateDir string, ctl func() *control.Control, runStore *runs.Store, log *slog.Logger) (*webhookListener, error) {
	d := cfg.Daemon
	if d.WebhookListen == "" {
		return nil, nil
	}
	hooks, err := webhook.New(webhook.Options{
		Dir: filepath.Join(stateDir, "webhooks"),
		Trigger: func(ctx context.Context, job string, env []string) (api.TriggerResult, error) {
			c := ctl()
			if c == nil {
				return api.TriggerResult{}, errors.New("the daemon is starting")
			}
			return c.TriggerWebhook(ctx, job, env)
		},
		RunKept: func(run uint64) bool { _, ok := runStore.Get(run); return ok },
		Logger:  log,
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	hooks.Apply(cfg.Webhooks)
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
	w := &webhookListener{hooks: hooks, url: scheme + "://" + ln.Addr().String(), err: make(chan error, 1),
		srv: &http.Server{Handler: hooks, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
			WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}}
	go func() {
		if err := w.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.err <- err
		}
	}()
	log.Info("webhook listener serving", logkey.URL, w.url)
	return w, nil
}

// Info is daemon_info's view (control.Webhooks).
func (w *webhookListener) Info() *api.WebhookInfo {
	return &api.WebhookInfo{URL: w.url, Routes: w.hooks.Stats()}
}

func (w *webhookListener) close(ctx context.Context) {
	w.once.Do(func() {
		w.srv.Shutdown(ctx)
		w.hooks.Close()
	})
}
