// Package deps pins the chosen dependencies in go.mod while the packages that
// use them are being written in parallel; it is deleted once they all import
// their own.
package deps

import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/creack/pty"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/robfig/cron/v3"
	_ "github.com/spf13/cobra"
	_ "go.uber.org/goleak"
	_ "golang.org/x/sys/unix"
)
