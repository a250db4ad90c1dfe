package daemon

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/logkey"
)

// watchDebounce lets an editor finish its write-rename dance before a
// reload reads the file.
const watchDebounce = 200 * time.Millisecond

// watcher reloads when the config file or a prompt directory changes,
// while [daemon] watch_config is on. reset follows the configuration in
// force (it is called after every reload), so turning watching on or off,
// or changing the prompt directories, takes effect without a restart.
type watcher struct {
	log *slog.Logger
	ctl *control.Control

	mu     sync.Mutex
	closed bool
	key    string // what the running watch was built from
	stop   func()
}

// reset makes the running watch match the configuration in force, read
// under w.mu so that racing resets end on the newest one.
func (w *watcher) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	cfg := w.ctl.Config()
	key := ""
	if cfg.Daemon.WatchConfig && cfg.Path != "" {
		key = cfg.Path + "\x00" + joinPaths(cfg.Prompts.Paths)
	}
	if w.closed || key == w.key {
		return
	}
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
	w.key = key
	if key != "" {
		w.stop = watchConfig(cfg, w.ctl, w.log)
	}
}

// close stops the watch for good.
func (w *watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
}

func joinPaths(ps []string) string {
	ps = slices.Clone(ps)
	slices.Sort(ps)
	out := ""
	for _, p := range ps {
		out += p + "\x00"
	}
	return out
}

// watchConfig watches directories, not files, so that editors that replace
// the file by rename are seen. The returned func stops the watcher and
// waits for it.
func watchConfig(cfg *config.Config, ctl *control.Control, log *slog.Logger) (stop func()) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		log.Error("config watcher unavailable", logkey.Err, err)
		return func() {}
	}
	cfgDir := filepath.Dir(cfg.Path)
	if err := w.Add(cfgDir); err != nil {
		log.Error("cannot watch config dir", logkey.Dir, cfgDir, logkey.Err, err)
	}
	// The harness files the config includes are config too; their
	// directory may be made after the watch starts (the first `harness
	// new`), and is watched from then on.
	incDir := filepath.Clean(config.IncludeDir(cfg.Path))
	watchInc := func() {
		if err := w.Add(incDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("cannot watch the included harness files", logkey.Dir, incDir, logkey.Err, err)
		}
	}
	watchInc()
	promptDirs := map[string]bool{}
	for _, p := range cfg.Prompts.Paths {
		if err := w.Add(p); err != nil {
			log.Warn("cannot watch prompt dir", logkey.Dir, p, logkey.Err, err)
		}
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
				name := filepath.Clean(ev.Name)
				if name == incDir && ev.Has(fsnotify.Create) {
					watchInc()
				}
				relevant := name == filepath.Clean(cfg.Path) || promptDirs[filepath.Dir(name)] ||
					name == incDir || filepath.Dir(name) == incDir && filepath.Ext(name) == ".toml"
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
				log.Error("config watcher", logkey.Err, err)
			case <-fire:
				fire = nil
				if _, err := ctl.Reload(context.Background(), api.NoArgs{}); err != nil {
					log.Error("config changed but the new file was refused", logkey.Err, err)
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
