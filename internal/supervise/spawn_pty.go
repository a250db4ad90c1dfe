package supervise

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/logs"
)

// startPTY starts a harness with attrs on a new PTY of the configured
// size, in its own session with the PTY as controlling terminal, and starts the reader
// that copies the master into the log. The actor closes the master after
// the exit. The returned func starts the reader: the actor calls it after
// logging the spawn, so "spawned" precedes the run's first output line in
// the activity log (the PTY buffers meanwhile).
func (a *actor) startPTY(p *proc, attrs *syscall.SysProcAttr) (func(), error) {
	cols, rows := ptySize(p.cfg)
	attrs.Setctty = true
	attrs.Ctty = 0 // the child's stdin is the PTY slave
	var master *os.File
	err := a.startProcess(p, func() error {
		m, err := pty.StartWithAttrs(p.cmd, &pty.Winsize{Cols: cols, Rows: rows}, attrs)
		master = m
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("start on pty: %w", err)
	}
	if nb, err := pollable(master); err != nil {
		// Still usable; only closing it will not interrupt a read.
		a.deps.Logger.Warn("supervise: pty master stays blocking", logkey.Run, p.run, logkey.Err, err)
	} else {
		master = nb
	}
	p.master = master
	p.cols, p.rows = cols, rows
	a.u.term.Reset(int(cols), int(rows))
	a.u.agent.begin(p.run)
	a.publishInput(p)
	a.u.out.started(p.run)
	logger := a.deps.Logger.With(logkey.Run, p.run)
	return func() {
		go func() {
			defer close(p.ioDone)
			var w io.Writer = newPTYWriter(a.u.agent, a.deps.Log, a.u.out, logger)
			if p.jobOut != nil {
				w = teeWriter{w: w, c: p.jobOut}
			}
			if p.jobLines != nil {
				w = io.MultiWriter(w, p.jobLines)
			}
			copyOutput(master, w, logger)
		}()
	}, nil
}

// copyOutput drains r into w until r fails: EIO once the PTY slave is
// closed everywhere, EOF for a pipe, or a closed file. It waits for
// nothing else, so the child never stalls on a full PTY or pipe because of
// a slow reader. While r has nothing to read it holds no buffer: a fleet
// of 1,000 quiet harnesses held 32 MiB in idle read buffers, which kept
// the daemon's heap at its soft memory limit and the collector running
// non-stop.
func copyOutput(r *os.File, w io.Writer, logger *slog.Logger) {
	rc, err := r.SyscallConn()
	if err != nil {
		logger.Warn("supervise: read output", logkey.Err, err)
		return
	}
	for {
		var (
			buf  *[]byte
			n    int
			rerr error
		)
		// The poller calls this once now and again each time r becomes
		// readable; a buffer is taken only for a read that may succeed.
		err := rc.Read(func(fd uintptr) bool {
			buf = outBufs.Get().(*[]byte)
			for {
				n, rerr = syscall.Read(int(fd), *buf)
				if rerr != syscall.EINTR {
					break
				}
			}
			n = max(n, 0)
			if rerr == syscall.EAGAIN {
				outBufs.Put(buf)
				buf = nil
				return false
			}
			return true
		})
		if n > 0 {
			// logWriter never fails: a closed log must not stall the child.
			_, _ = w.Write((*buf)[:n])
		}
		if buf != nil {
			outBufs.Put(buf)
		}
		switch {
		case err != nil:
			return // r was closed
		case rerr != nil:
			if !errors.Is(rerr, syscall.EIO) {
				logger.Warn("supervise: read output", logkey.Err, rerr)
			}
			return
		case n == 0:
			return // EOF
		}
	}
}

// outBufs holds the output readers' buffers between reads.
var outBufs = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

// logWriter writes into the unit's log and never fails, so output keeps
// draining when the log is closed or broken; the first failure is logged.
type logWriter struct {
	l      *logs.Log
	logger *slog.Logger
	once   *sync.Once
}

func newLogWriter(l *logs.Log, logger *slog.Logger) logWriter {
	return logWriter{l: l, logger: logger, once: new(sync.Once)}
}

func (w logWriter) Write(p []byte) (int, error) {
	if _, err := w.l.Write(p); err != nil {
		w.once.Do(func() { w.logger.Warn("supervise: output dropped", logkey.Err, err) })
	}
	return len(p), nil
}

// pollable returns a non-blocking duplicate of f that goes through Go's
// poller, and closes f. creack/pty hands out a blocking master (it calls
// Fd()), whose Close does not interrupt a Read: a grandchild that keeps
// the PTY open would then pin the reader goroutine and the fd for good.
func pollable(f *os.File) (*os.File, error) {
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("dup pty master: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pty master non-blocking: %w", err)
	}
	unix.CloseOnExec(fd)
	nb := os.NewFile(uintptr(fd), f.Name())
	if err := f.Close(); err != nil {
		nb.Close()
		return nil, fmt.Errorf("close blocking pty master: %w", err)
	}
	return nb, nil
}
