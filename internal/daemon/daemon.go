// Package daemon wires the supervisor, the control operations, the MCP
// surface and the control socket into the `harness daemon` process: the
// single-instance lock, leftovers of a crashed predecessor, the state file,
// reloads (SIGHUP, the reload op, a config watcher) and an orderly shutdown.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/actionlink"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/audit"
	"github.com/harness-dev/harness/internal/calllog"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/kaudit"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/mcp/broker"
	"github.com/harness-dev/harness/internal/mcp/httpmcp"
	"github.com/harness-dev/harness/internal/mcp/pins"
	"github.com/harness-dev/harness/internal/mcp/session"
	"github.com/harness-dev/harness/internal/notify"
	"github.com/harness-dev/harness/internal/proctree"
	"github.com/harness-dev/harness/internal/protocol"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/supervise"
	"github.com/harness-dev/harness/internal/trajectory"
	"github.com/harness-dev/harness/internal/upauth"
	"github.com/harness-dev/harness/internal/web"
)

// Options configure one daemon. Empty paths take the defaults (docs/design/wire.md).
type Options struct {
	ConfigPath string
	SocketPath string
	StateDir   string
	Version    string
	Logger     *slog.Logger
	// Limits overrides the crash-loop thresholds (tests shrink them).
	Limits *supervise.Limits
	// Ready, when set, is called once the socket serves.
	Ready func(api.Paths)
	// HandleSignals makes the daemon react to SIGHUP/SIGTERM/SIGINT.
	HandleSignals bool
	// Cgroup picks how units' process trees are held: "" or CgroupAuto
	// uses a cgroup v2 subtree when the daemon can make one, CgroupOff
	// always takes the fallback (process groups, markers, ancestry
	// tracking).
	Cgroup string
	// OwnProcess says the daemon is alone in its process (harness daemon):
	// at shutdown it ends every process still re-parented to it. Daemons
	// that tests run in-process share their process and leave it off.
	OwnProcess bool
	// UpstreamConnectTimeout bounds an upstream's initialize handshake and
	// first tool listing (0: the broker's default); tests shrink it.
	UpstreamConnectTimeout time.Duration
}

// leftoverGrace bounds how long a starting daemon waits for a crashed
// predecessor's processes to end after SIGTERM before it SIGKILLs them.
const leftoverGrace = 3 * time.Second

// Run serves until ctx ends, a shutdown is requested, or a signal arrives;
// then it stops every unit and returns. Nothing it started outlives it.
func Run(ctx context.Context, opt Options) (err error) {
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	paths, err := resolvePaths(opt)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(paths.StateDir, 0o700); err != nil {
		return fmt.Errorf("daemon: state dir: %w", err)
	}
	if err := tightenStateDir(paths.StateDir, log); err != nil {
		return err
	}
	// The lock comes before anything else: a second daemon must spawn
	// nothing and leave the first one's socket alone.
	release, err := protocol.AcquireLock(paths.Socket + ".lock")
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	defer release()
	// Signals are ours from here on: a SIGTERM while units autostart must
	// still stop them, not kill the daemon with its children orphaned.
	var sigs chan os.Signal
	if opt.HandleSignals {
		sigs = make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
		defer signal.Stop(sigs)
	}

	cfg, err := config.Load(paths.Config)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	if err := proctree.BecomeSubreaper(); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	octx, ocancel := context.WithCancel(context.Background())
	defer ocancel()
	own, ledger, err := setupOwnership(octx, opt.Cgroup, paths.Socket, filepath.Join(paths.StateDir, "processes.json"), log)
	if err != nil {
		return err
	}
	defer own.close()
	instance, err := proctree.NewInstanceID()
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	if err := ledger.AddInstance(instance); err != nil {
		// A full state dir stops nothing: the ledger's writer retries,
		// and daemon_info's state_writes says it is failing.
		log.Warn("the process ledger cannot be written; retrying", logkey.Err, err)
	}
	runStore, err := runs.Open(filepath.Join(paths.StateDir, "runs.jsonl"), 0)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	defer runStore.Close()
	if n := runStore.CloseDangling("daemon-exit"); n > 0 {
		log.Info("closed runs left open by a previous daemon", logkey.Count, n)
	}
	// The one masker (docs/design/masking.md): control loads it with the fleet's
	// secrets at every applied configuration.
	masker := mask.New()
	// A job's result and a run's note are the agent's words: masked
	// before the run history keeps them.
	runStore.SetMask(masker.Func())
	calls, err := openCallLog(paths.StateDir, log, masker)
	if err != nil {
		return err
	}
	defer closeCallLog(calls, log) // after the sessions, which record into it
	// OTLP export (docs/design/telemetry.md): nil while [telemetry] is off.
	tel := startTelemetry(cfg.Telemetry, opt.Version, runStore, log)
	defer closeTelemetry(tel, log) // before the run history closes: ended runs wait on it
	auditLog, err := audit.Open(paths.StateDir, audit.Options{Logger: log})
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	defer func() {
		if err := auditLog.Close(); err != nil {
			log.Error("audit log close", logkey.Err, err)
		}
	}()

	httpEP, err := listenHTTP(cfg)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	mcpURL, dashURL := "", ""
	if httpEP != nil {
		mcpURL, dashURL = httpEP.url, httpEP.dashURL
		defer httpEP.ln.Close()
	}
	// The listener for people: a certificate that does not load stops
	// this door only (daemon_info's web_error says why).
	people := listenPeople(cfg.Web, paths.StateDir, log)
	var devices control.Devices
	if people != nil {
		devices = people
		defer people.shutdown(context.Background())
	}
	// The tailnet node (docs/design/web.md): it joins once the dashboard
	// exists, in the background; a refused key stops this door only.
	tn := newTailnetDoor(cfg.Web, paths.StateDir)
	defer tn.close(context.Background())
	var tnInfo func() (string, string)
	if tn != nil {
		tnInfo = tn.info
	}
	// The action links notifications carry (docs/design/events.md), served
	// by the dashboard on whichever listeners serve it.
	links := actionlink.New(nil)

	reaper := proctree.NewReaper(log)
	rctx, rcancel := context.WithCancel(context.Background())
	reaper.Start(rctx)
	defer func() { rcancel(); reaper.Stop() }()

	// Sandboxed runs' file refusals, as the kernel's audit tells them
	// (docs/design/sandbox.md): read only, never turned on here.
	fileDenials := kaudit.Start(log, kaudit.Options{})
	defer fileDenials.Close()

	tokens := supervise.NewTokens()
	// The broker is control's UpstreamHooks as it is: each run reports its
	// own start (an upstream that never completes initialize is a failed
	// start) to its supervisor.
	// OAuth sign-ins of remote upstreams (auth = "oauth"): 0600 files
	// under the state dir, and the sign-ins in progress.
	oauthStore := upauth.NewStore(filepath.Join(paths.StateDir, "oauth"))
	defer oauthStore.Close()
	// Tool pins (docs/gateway.md): a corrupt file is set aside and said
	// (the broker's warnings, daemon_info), never read as approval.
	pinStore, err := pins.Open(filepath.Join(paths.StateDir, "pins.json"))
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	if w := pinStore.Warning(); w != "" {
		log.Error("daemon: tool pins", logkey.Warning, w)
	}
	// Control exists only later; a held-back tool reported before it
	// does reaches it at its next listing.
	var ctlRef atomic.Pointer[control.Control]
	// The page's other machines ([host.NAME]), once the page exists.
	var remoteRef atomic.Pointer[remoteFleets]
	brk := broker.New(log, broker.Options{
		ConnectTimeout: opt.UpstreamConnectTimeout,
		Mask:           masker.Func(),
		OAuth:          oauthStore,
		Pins:           pinStore,
		OnToolChanged: func(tc broker.ToolChange) {
			if c := ctlRef.Load(); c != nil {
				c.ToolChanged(tc.Unit, tc.Key, tc.Tool, tc.State, tc.Changed)
			}
		},
	})
	defer brk.Close()

	// The notifier and the webhook receiver read from control and control
	// reports on them: control.New builds them on itself, with these
	// constructors, before any unit exists. Both are the daemon's to close.
	var ntf *notify.Notifier
	defer func() {
		if ntf != nil {
			ntf.Close()
		}
	}()
	newNtf := func(c *control.Control) control.Notifier {
		ntf = newNotifier(c, reaper, own, instance, masker, httpEP, people, tn, links, log)
		return ntf
	}
	var wh *webhookListener
	var newWh func(*control.Control) (control.Webhooks, error)
	if cfg.Daemon.WebhookListen != "" {
		newWh = func(c *control.Control) (control.Webhooks, error) {
			w, err := newWebhooks(cfg.Daemon, paths.StateDir, c, runStore, log)
			if err != nil {
				return nil, err
			}
			wh = w
			return w, nil
		}
		defer func() {
			if wh != nil {
				wh.close(context.Background())
			}
		}()
	}

	srv := &protocol.Server{Version: opt.Version, Logger: log}
	shutdownCh := make(chan struct{})
	var shutdownOnce sync.Once
	requestShutdown := func() { shutdownOnce.Do(func() { close(shutdownCh) }) }

	limits := supervise.Limits{}
	if opt.Limits != nil {
		limits = *opt.Limits
	}
	var mgr *session.Manager
	promptSet := &promptHolder{}
	watch := &watcher{log: log}
	logDir := filepath.Join(paths.StateDir, "logs")
	// Run transcripts of harnesses with harvest_trajectory;
	// HARNESS_TRAJECTORY_MAX_RUNS / _MAX_BYTES override the retention.
	trajOpt, err := trajectory.OptionsFromEnv()
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	trajStore, err := trajectory.Open(filepath.Join(paths.StateDir, "trajectories"), trajOpt)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	defer trajStore.Close()
	ctl, err := control.New(cfg, control.Options{
		ConfigPath: paths.Config,
		Paths:      paths,
		Version:    opt.Version,
		Proto:      protocol.Version,
		Runs:       runStore,
		SocketPath: paths.Socket,
		Exe:        selfExe(),
		Tokens:     tokens,
		MCPURL:     mcpURL,
		Upstreams:  brk,
		Prompts:    promptSet,
		State:      stateFile{filepath.Join(paths.StateDir, "state.json")},
		OpenLog: func(name string, onEntry func(logs.Entry)) (*logs.Log, error) {
			return logs.Open(logDir, name, logs.Options{OnEntry: onEntry, Mask: masker.Func()})
		},
		Trajectories: trajStore,
		Calls:        calls,
		Audit:        auditLog,
		Masker:       masker,
		OAuth:        oauthStore,
		NewDeps: func(name string, kind supervise.Kind) (supervise.Deps, error) {
			return supervise.Deps{
				Tokens:      tokens,
				Reaper:      reaper,
				Ledger:      ledger,
				Cgroups:     own.tree,
				Tracker:     own.tracker,
				AwaitReady:  kind == supervise.KindUpstream,
				Instance:    instance,
				Limits:      limits,
				Logger:      log, // supervise adds the unit key itself
				FileDenials: fileDenials,
			}, nil
		},
		OnEvent: onEvent(srv, tel), // control feeds the notifier itself
		OnReload: func(cfg *config.Config) {
			// Control has put the new notify tables and webhook routes
			// in force already.
			srv.Publish(api.Event{Kind: api.EventReload, Time: time.Now()})
			if mgr != nil {
				applyLive(cfg.Daemon, mgr, calls)
				mgr.Refresh()
			}
			if r := remoteRef.Load(); r != nil {
				r.apply(cfg)
			}
			// watch_config or the prompt directories may have changed.
			// Not inline: the watcher itself may be the one reloading.
			go watch.reset()
		},
		Shutdown:     requestShutdown,
		Logger:       log,
		Ownership:    own.info,
		DashboardURL: dashURL,
		Devices:      devices,
		Tailnet:      tnInfo,
		Reaper:       reaper,
		NewNotifier:  newNtf,
		NewWebhooks:  newWh,
		StateWrites: func() api.StateWrites {
			return stateWrites(runStore, ledger)
		},
		Telemetry: telemetryInfo(tel),
	})
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	watch.ctl = ctl
	ctlRef.Store(ctl)
	mgr = session.NewManager(ctl, authority{tokens: tokens, ctl: ctl}, brk, promptSet.current, log, opt.Version)
	if tel != nil {
		mgr.SetCallRecorder(telemetryRecorder{calls: calls, tel: tel})
		mgr.SetCallTracer(tel)
	} else {
		mgr.SetCallRecorder(calls)
	}
	applyLive(ctl.Config().Daemon, mgr, calls)
	cancelBrokerWatch := brk.OnChange(mgr.Refresh)
	brk.OnResourceUpdated(mgr.ResourceUpdated)
	srv.Handler = handler{ctl: ctl, mgr: mgr, log: log}

	ln, err := protocol.Listen(paths.Socket)
	if err != nil {
		ctl.Close(context.Background())
		return fmt.Errorf("daemon: %w", err)
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	var whErr chan error
	if wh != nil {
		// Deliveries wait in the listen backlog until now: control and
		// the routes in force are both there.
		whErr = wh.serve(log)
	}
	var httpErr chan error
	var dash *web.Server
	var remote *remoteFleets
	if httpEP != nil || people != nil || tn != nil {
		// Other machines' fleets, for the page: followed in the
		// background, never on a request's path.
		var observe func(api.Event)
		if ntf != nil {
			observe = ntf.Observe
		}
		remote = startRemoteFleets(ctl, observe, log)
		remoteRef.Store(remote)
		defer remote.close()
		// The operator token signs in to the dashboard as to MCP.
		tok, err := httpmcp.LoadOrCreateOperatorToken(paths.StateDir)
		if err == nil {
			dash, err = newDashboard(webBackend{ctl: ctl, srv: srv}, tok, paths.StateDir, people, tn, links, remote.remotes(), log)
		}
		if dash != nil && remote != nil {
			remote.dash.Store(dash)
		}
		if err != nil {
			log.Error("web dashboard not served", logkey.Err, err)
		}
		if httpEP != nil && err == nil {
			maxMessage := func() int { return ctl.Config().Daemon.MCPMaxMessage }
			httpEP.serve(mgr, tok, maxMessage, metricsHandler(log, calls, ntf), dash, log)
			httpErr = httpEP.err
		}
		if people != nil && dash != nil {
			people.serve(dash, log)
		}
		if tn != nil && dash != nil {
			tn.start(dash, log)
		}
	}
	log.Info("daemon serving", logkey.Socket, paths.Socket, logkey.Config, paths.Config, logkey.StateDir, paths.StateDir, logkey.PID, os.Getpid(), logkey.Version, opt.Version)

	ctl.Boot(ctx)
	log.Info("daemon booted: autostarts issued")
	watch.reset()
	if opt.Ready != nil {
		opt.Ready(paths)
	}

	var failure error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-shutdownCh:
			break loop
		case err := <-serveErr:
			log.Error("control socket failed", logkey.Err, err)
			failure = fmt.Errorf("daemon: control socket: %w", err)
			break loop
		case err := <-whErr:
			log.Error("webhook listener failed", logkey.Err, err)
			failure = fmt.Errorf("daemon: webhook listener: %w", err)
			break loop
		case err := <-httpErr:
			log.Error("mcp http endpoint failed", logkey.Err, err)
			failure = fmt.Errorf("daemon: mcp http endpoint: %w", err)
			break loop
		case s := <-sigs:
			if s == syscall.SIGHUP {
				if _, err := ctl.Reload(context.Background(), api.NoArgs{}); err != nil {
					log.Error("SIGHUP reload refused", logkey.Err, err)
				}
				continue
			}
			log.Info("signal received; shutting down", logkey.Signal, s.String())
			break loop
		}
	}

	log.Info("daemon stopping")
	watch.close()
	cancelBrokerWatch()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if wh != nil {
		wh.close(sctx) // no delivery starts a job from here on
	}
	// Stop every unit concurrently first, so that harness sessions see their
	// daemon go away only after their own processes were told to stop.
	ctl.Close(context.Background())
	mgr.Close()
	if dash != nil {
		// Its event streams and terminals never go idle: end them first,
		// or Shutdown would wait for them until ctx ends.
		dash.Close()
	}
	if err := tn.close(sctx); err != nil {
		log.Error("tailnet node shutdown", logkey.Err, err)
	}
	if people != nil {
		if err := people.shutdown(sctx); err != nil {
			log.Error("web listener shutdown", logkey.Err, err)
		}
	}
	if httpEP != nil {
		if err := httpEP.shutdown(sctx); err != nil {
			log.Error("mcp http shutdown", logkey.Err, err)
		}
	}
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("socket shutdown", logkey.Err, err)
	}
	// Every unit has stopped: what is left was adopted or escaped a stop.
	own.shutdown(opt.OwnProcess)
	if err := ledger.Clear(); err != nil {
		log.Error("clear process ledger", logkey.Err, err)
	}
	log.Info("daemon stopped")
	return failure
}

func resolvePaths(opt Options) (api.Paths, error) {
	sock, state, cfgPath := protocol.DefaultPaths()
	if opt.SocketPath != "" {
		sock = opt.SocketPath
	}
	if opt.StateDir != "" {
		state = opt.StateDir
	}
	if opt.ConfigPath != "" {
		cfgPath = opt.ConfigPath
	}
	if sock == "" || state == "" {
		return api.Paths{}, errors.New("daemon: cannot determine socket or state dir: set HOME or pass --socket and --state-dir")
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	return api.Paths{Config: abs(cfgPath), Socket: abs(sock), StateDir: abs(state)}, nil
}

// applyLive puts in force the [daemon] keys that apply without a restart,
// at start and after every reload.
func applyLive(d config.Daemon, mgr *session.Manager, calls *calllog.Log) {
	mgr.SetMaxMessage(d.MCPMaxMessage)
	calls.SetKeepArgs(d.CallLogArgs)
}

// tightenStateDir makes an existing state dir private to the daemon's user
// (0700), as a new one is made: it holds tokens, logs and the call log, and
// one left 0755 by hand or by an old version let every user read them.
func tightenStateDir(dir string, log *slog.Logger) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("daemon: state dir: %w", err)
	}
	if st.Mode().Perm() == 0o700 {
		return nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("daemon: state dir %s has mode %#o and cannot be made 0700: %w", dir, st.Mode().Perm(), err)
	}
	log.Warn("state dir was not private; made it 0700", logkey.StateDir, dir, logkey.Mode, fmt.Sprintf("%#o", st.Mode().Perm()))
	return nil
}

// selfExe is the absolute path of this binary, which known agents launch
// as `harness mcp` and `harness hook` (control's agent wiring); "" when it
// cannot be found, and then no agent is wired.
func selfExe() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if abs, err := filepath.EvalSymlinks(exe); err == nil {
		return abs
	}
	return exe
}
