package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
)

// startStdio starts an upstream with attrs and pipes: stdin and stdout for the
// broker (handed over by the returned function once the run is recorded),
// stderr into the log. Without Deps.OnLink stdout goes to the log too.
func (a *actor) startStdio(p *proc, attrs *syscall.SysProcAttr) (onStarted func(), err error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("stdout pipe: %w", err), inR.Close(), inW.Close())
	}
	logger := a.deps.Logger.With(logkey.Run, p.run)
	p.cmd.Stdin = inR
	p.cmd.Stdout = outW
	p.cmd.Stderr = newLogWriter(a.deps.Log, logger) // exec copies it; WaitDelay bounds the copy
	p.cmd.SysProcAttr = attrs
	err = a.startProcess(p, p.cmd.Start)
	// The child has its own copies; ours would keep EOF from ever coming.
	childEnds := errors.Join(inR.Close(), outW.Close())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("start: %w", err), inW.Close(), outR.Close(), childEnds)
	}
	if childEnds != nil {
		logger.Warn("supervise: close child pipe ends", logkey.Err, childEnds)
	}
	stdin := &closeOnce{Writer: inW, c: inW}
	p.stdin = stdin
	if a.deps.OnLink == nil {
		go func() {
			defer close(p.ioDone)
			copyOutput(outR, newLogWriter(a.deps.Log, logger), logger)
			if err := outR.Close(); err != nil {
				logger.Warn("supervise: close stdout", logkey.Err, err)
			}
		}()
		return nil, nil
	}
	// The broker owns stdout from here; the waiter does not wait for it.
	close(p.ioDone)
	r := api.UpstreamRun{Unit: a.cfg.Name, Run: p.run, Link: api.Pipes{Stdin: stdin, Stdout: outR}, Started: a.startedFunc(p.run)}
	return func() { a.deps.OnLink(context.Background(), r) }, nil
}
