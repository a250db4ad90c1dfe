package daemon

import (
	"sync/atomic"

	"github.com/harness-dev/harness/internal/mcp/prompts"
	"github.com/harness-dev/harness/internal/mcp/session"
)

// promptHolder is the prompt set in force. Control loads a new one with
// each configuration it applies (control.PromptSource); sessions read it
// on every list and get.
type promptHolder struct {
	set atomic.Pointer[prompts.Set]
}

// Load implements control.PromptSource.
func (p *promptHolder) Load(paths []string) (commit func(), warnings []string) {
	set, warns := prompts.Load(paths)
	for _, w := range warns {
		warnings = append(warnings, w.String())
	}
	return func() { p.set.Store(set) }, warnings
}

// current is the session manager's view: nil when no prompts are loaded.
func (p *promptHolder) current() session.Prompts {
	if s := p.set.Load(); s != nil {
		return s
	}
	return nil
}
