package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// agentShort is the agent state for a table cell: "ready",
// "waiting:permission", "limited"; "-" without a run.
func agentShort(v api.AgentView) string {
	switch {
	case v.AgentState == "":
		return "-"
	case v.WaitingFor != "":
		return string(v.AgentState) + ":" + string(v.WaitingFor)
	}
	return string(v.AgentState)
}

// agentText is the agent state in full: the adapter, the state, and what
// a waiting agent asks with its numbered choices (the one that goes on
// marked, when the adapter knows it), a limit's reset, an
// error's message.
func agentText(v api.AgentView) string {
	var b strings.Builder
	b.WriteString(v.Agent)
	if v.AgentState == "" {
		return b.String()
	}
	fmt.Fprintf(&b, ", %s", v.AgentState)
	if v.WaitingFor != "" {
		fmt.Fprintf(&b, " for %s", v.WaitingFor)
	}
	if v.Prompt != "" {
		fmt.Fprintf(&b, ": %s", v.Prompt)
	}
	if len(v.Choices) > 0 {
		cs := make([]string, len(v.Choices))
		for i, c := range v.Choices {
			cs[i] = fmt.Sprintf("%d. %s", i+1, c)
			if c == v.Suggested {
				cs[i] += " (suggested)"
			}
		}
		fmt.Fprintf(&b, " [%s]", strings.Join(cs, " | "))
	}
	if v.Until != nil {
		fmt.Fprintf(&b, " until %s", v.Until.Local().Format(time.DateTime))
	}
	if v.AgentMessage != "" {
		fmt.Fprintf(&b, " (%s)", v.AgentMessage)
	}
	return b.String()
}
