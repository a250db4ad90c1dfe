// Package facade is the one registry of the MCP facade tools: the control
// operations exposed as MCP tools (docs/design/mcp.md). Each tool has a name in the
// reserved "harness_" namespace, a read/write/input class used for scoping, the
// control operation it calls, and a JSON Schema describing every argument.
// The tools are api's op specs that carry a Tool; the schemas are derived
// from the ops' argument types. Arguments are passed to the control
// operation unchanged, so the schema uses the CLI's words.
package facade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// Prefix is the reserved namespace of the facade: every facade tool is named
// Prefix + "_" + op, and config rejects upstream keys starting with Prefix so
// no upstream can shadow a facade tool.
const Prefix = "harness"

// Tool is one facade tool.
type Tool struct {
	// Name is the client-visible tool name, "harness_" + Op.
	Name string
	// Class decides which sessions may see and call the tool.
	Class api.Class
	// Op is the control operation the tool calls with its arguments unchanged.
	Op string
	// Description is shown to the model.
	Description string
	// InputSchema is a JSON Schema object describing every argument.
	InputSchema json.RawMessage
	// ResultKey, when set, names the key under which an array result is
	// wrapped, because MCP structuredContent must be an object.
	ResultKey string
}

// registry is every facade tool, read tools first, built from api's op
// specs: a spec with a Tool is a tool here, its input schema derived from
// its argument type (schema.go). It is built at first use, not at start:
// deriving the schemas took 3 ms (16 ms under -race) of every harness
// process, `harness hook` and each CLI command included.
var registry = sync.OnceValue(func() []Tool {
	var tools []Tool
	for _, sp := range api.Specs() {
		if sp.Tool == nil {
			continue
		}
		schema, err := inputSchema(sp.Args, sp.Op)
		if err != nil {
			panic(fmt.Sprintf("facade: tool %s: %v", sp.Tool.Name, err))
		}
		tools = append(tools, Tool{
			Name: sp.Tool.Name, Class: sp.Class, Op: sp.Op, Description: sp.Tool.Description,
			InputSchema: schema, ResultKey: sp.Tool.ResultKey,
		})
	}
	order := map[api.Class]int{api.Read: 0, api.Write: 1, api.Input: 2}
	slices.SortStableFunc(tools, func(a, b Tool) int { return order[a.Class] - order[b.Class] })
	return tools
})

var byName = sync.OnceValue(func() map[string]int {
	m := make(map[string]int, len(registry()))
	for i, t := range registry() {
		m[t.Name] = i
	}
	return m
})

// Tools returns the facade tools, read tools first. The slice and its
// schemas are copies: callers may keep or modify them freely.
func Tools() []Tool {
	out := make([]Tool, len(registry()))
	for i, t := range registry() {
		out[i] = t.clone()
	}
	return out
}

// Lookup returns the facade tool called name.
func Lookup(name string) (Tool, bool) {
	i, ok := byName()[name]
	if !ok {
		return Tool{}, false
	}
	return registry()[i].clone(), true
}

// Reserved reports whether name lies in the facade namespace, whether or not
// such a tool exists: an unknown "harness_x" is an unknown tool, never an
// upstream's.
func Reserved(name string) bool {
	return strings.HasPrefix(name, Prefix+"_")
}

func (t Tool) clone() Tool {
	t.InputSchema = bytes.Clone(t.InputSchema)
	return t
}

// resolved caches each tool's compiled schema; compiling is deterministic,
// so a failure here is a programming error caught by the package tests.
var (
	resolveOnce sync.Once
	resolvedBy  map[string]*jsonschema.Resolved
	resolveErr  error
)

func resolveAll() {
	resolvedBy = make(map[string]*jsonschema.Resolved, len(registry()))
	for _, t := range registry() {
		var s jsonschema.Schema
		if err := json.Unmarshal(t.InputSchema, &s); err != nil {
			resolveErr = fmt.Errorf("facade: tool %s: parse schema: %w", t.Name, err)
			return
		}
		r, err := s.Resolve(nil)
		if err != nil {
			resolveErr = fmt.Errorf("facade: tool %s: resolve schema: %w", t.Name, err)
			return
		}
		resolvedBy[t.Name] = r
	}
}

// Validate checks args against the tool's input schema. Empty or null args
// count as {}. A mismatch wraps errcode.ErrInvalidArgument and names the
// tool, so it reaches the caller as an invalid_argument result.
func (t Tool) Validate(args json.RawMessage) error {
	resolveOnce.Do(resolveAll)
	if resolveErr != nil {
		return fmt.Errorf("%w: %w", resolveErr, errcode.ErrInternal)
	}
	r, ok := resolvedBy[t.Name]
	if !ok {
		return errcode.Errorf(errcode.UnknownTool, "facade: tool %q", t.Name)
	}
	var inst any = map[string]any{}
	if trimmed := bytes.TrimSpace(args); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if err := json.Unmarshal(trimmed, &inst); err != nil {
			return errcode.Errorf(errcode.InvalidArgument, "%s: arguments are not JSON: %s", t.Name, errcode.Clip(err.Error(), 256))
		}
	}
	if err := r.Validate(inst); err != nil {
		// The validator quotes the offending value: keep a prefix only.
		return errcode.Errorf(errcode.InvalidArgument, "%s: %s", t.Name, errcode.Clip(err.Error(), 256))
	}
	return nil
}
