package daemon

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/control"
)

// watchDebounce lets an editor finish its write-rename dance before a
// reload reads the file.
const watchDebounce = 200 * time.Millisecond

// watchConfig reloads when the config file or a prompt directory changes,
// when [daemon] watch_config is on. It watches directories, not files, so
// that editors that replace the file by rename are seen. The returned func
// stops the watcher and waits for it.
func watchConfig(cfg *config.Config, ctl *control.Control, log *slog.Logger) (stop func()) {
	if !cfg.Daemon.WatchConfig || cfg.Path == "" {
		return func() {}
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		log.Error("config watcher unavailable", "err", err)
		return func() {}
	}
	cfgDir := filepath.Dir(cfg.Path)
	if err := w.Add(cfgDir); err != nil {
		log.Error("cannot watch config dir", "dir", cfgDir, "err", err)
	}
	for _, p := range cfg.Prompts.Paths {
		if err := w.Add(p); err != nil {
			log.Warn("cannot watch prompt dir", "dir", p, "err", err)
		}
	}
	promptDirs := map[string]bool{}
	for _, p := range cfg.Prompts.Paths {
		promptDirs[filepath.Clean(p)] = true
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var timer *time.Timer
		var fire <-chan time.Time
		for {
			select {
			case <-done:
				if timer != nil {
					timer.Stop()
				}
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				relevant := filepath.Clean(ev.Name) == filepath.Clean(cfg.Path) || promptDirs[filepath.Dir(ev.Name)]
				if !relevant {
					continue
				}
				if timer == nil {
					timer = time.NewTimer(watchDebounce)
				} else {
					timer.Reset(watchDebounce)
				}
				fire = timer.C
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				log.Error("config watcher", "err", err)
			case <-fire:
				fire = nil
				if _, err := ctl.Reload(context.Background()); err != nil {
					log.Error("config changed but the new file was refused", "err", err)
				}
			}
		}
	}()
	return func() {
		close(done)
		w.Close()
		<-finished
	}
}
