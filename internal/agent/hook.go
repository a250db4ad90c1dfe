package agent

import (
	"encoding/json"
	"fmt"

	"github.com/harness-dev/harness/internal/api"
)

// HookSignal is what one call of an agent's hook (`harness hook EVENT`,
// its JSON payload on stdin) says about the agent: a state when the event
// tells one, and what the run's transcript reader needs.
type HookSignal struct {
	// State is "" when the event says nothing about the agent's state.
	State      api.AgentState
	WaitingFor api.WaitingFor
	// Message is the agent's own words (a notification's text): the prompt
	// of a waiting state until the screen shows the dialog, the message
	// of a limited one.
	Message string
	// SessionID and Transcript (the path of the agent's session file) are
	// set when the payload carries them.
	SessionID  string
	Transcript string
	// Tool is the tool call about to run (its name and its input, as
	// one string): what the loop guard compares (docs/design/agents.md).
	Tool string
	// TranscriptTools is set on the end of a turn of an agent whose hooks
	// name no tool call (Codex's notify): the turn's tool calls reach the
	// loop guard from the transcript read after it.
	TranscriptTools bool
}

// MaxHookPayload bounds the payload a hook call may carry
// (api.MaxHookPayload, which the CLI checks too).
const MaxHookPayload = api.MaxHookPayload

// ParseHook reads one hook call of the agent: event is the hook event
// (the argument of `harness hook`), payload its JSON. A payload that is not
// a JSON object is an error; an event the adapter does not know is a
// signal with no state.
func (a *Adapter) ParseHook(event string, payload []byte) (HookSignal, error) {
	if len(payload) > MaxHookPayload {
		return HookSignal{}, fmt.Errorf("hook %s: payload of %d bytes is over %d", event, len(payload), MaxHookPayload)
	}
	m := map[string]any{}
	if len(payload) > 0 {
		if err := json.Unmarshal(payload, &m); err != nil {
			return HookSignal{}, fmt.Errorf("hook %s: payload is not a JSON object: %w", event, err)
		}
	}
	if a.Hook == nil {
		return HookSignal{}, nil
	}
	sig := a.Hook(event, m)
	if sig.SessionID != "" && !ValidSession(sig.SessionID) {
		sig.SessionID = "" // it would be resumed on a command line
	}
	return sig, nil
}

// hookCommand is the shell command an agent runs for event: `EXE hook
// EVENT`, EXE quoted for a POSIX shell.
func hookCommand(exe, event string) string {
	return shellWord(exe) + " hook " + event
}

// shellWord quotes s as one POSIX shell word.
func shellWord(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, `'\''`...)
			continue
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}
