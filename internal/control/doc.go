// Package control holds the control operations of the daemon: the only place
// where the meaning of list, describe, logs, start, stop, restart, runs, jobs,
// triggers, trigger, profiles, use_profile, reload, daemon_info, shutdown and
// mcp_status lives. The socket, the CLI (through the socket) and every MCP
// session reach them through Control.Call.
package control
