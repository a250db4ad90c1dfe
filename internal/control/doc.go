// Package control holds the control operations of the daemon: the only place
// where the meaning of each operation of the wire lives (api.Specs lists
// them: list, describe, logs, start, stop, restart, runs, jobs, triggers,
// trigger, profiles, use_profile, reload, daemon_info, shutdown, mcp_status,
// project_up, project_down, list_trajectories, get_trajectory, calls, send,
// screen, wait, and whatever a spec line adds). The socket, the CLI (through
// the socket) and every MCP session reach them through Control.Call.
package control
