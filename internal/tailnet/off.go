//go:build !tailnet

package tailnet

import (
	"context"

	"github.com/harness-dev/harness/internal/logkey"
)

// Built reports whether this binary can join a tailnet.
const Built = false

// Node is a tailnet node that never comes up: this build has no tsnet.
type Node struct{ state }

// Start reports ErrNotBuilt through Info.
func Start(opt Options) *Node {
	n := &Node{}
	n.failure = ErrNotBuilt.Error()
	if opt.Logger != nil {
		opt.Logger.Error("the tailnet node is not started; everything else is served", logkey.Err, ErrNotBuilt)
	}
	return n
}

// Close does nothing.
func (n *Node) Close(context.Context) error { return nil }
