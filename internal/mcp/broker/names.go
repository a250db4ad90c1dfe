package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Separator joins an upstream key and a tool name into the client-visible
// name KEY__tool.
const Separator = "__"

// MaxNameLen is the longest client-visible tool name that is served; many
// MCP clients refuse longer ones.
const MaxNameLen = 64

// SplitName splits a client-visible name KEY__tool on the first "__".
// ok is false when name has no separator or either side is empty.
func SplitName(name string) (key, tool string, ok bool) {
	key, tool, found := strings.Cut(name, Separator)
	if !found || key == "" || tool == "" {
		return "", "", false
	}
	return key, tool, true
}

// namespace turns an upstream's tool list into the served set: namespaced
// copies keyed by the upstream's own tool name. Tools that cannot be served are left out and
// described in the returned warnings; schema repairs are described in notes
// (logged, not warnings: the tool still works).
func namespace(key string, tools []*mcp.Tool) (set map[string]*mcp.Tool, warnings, notes []string) {
	set = make(map[string]*mcp.Tool, len(tools))
	label := "mcp." + key
	if strings.Contains(key, Separator) {
		// SplitName cuts at the first "__", so such a key's tools could
		// never be addressed.
		return set, []string{fmt.Sprintf("%s: key contains %q: its tools cannot be addressed and are not served", label, Separator)}, nil
	}
	for _, t := range tools {
		if t == nil || t.Name == "" {
			continue
		}
		full := key + Separator + t.Name
		if len(full) > MaxNameLen {
			warnings = append(warnings, fmt.Sprintf("%s: tool %s: namespaced name %s is %d characters, over %d", label, t.Name, full, len(full), MaxNameLen))
			continue
		}
		c := *t
		c.Name = full
		var changed bool
		c.InputSchema, changed = normaliseInput(t.InputSchema)
		if changed {
			notes = append(notes, fmt.Sprintf("%s: tool %s: input schema root is not {\"type\":\"object\"}; normalised", label, t.Name))
		}
		if t.OutputSchema != nil && !objectSchema(t.OutputSchema) {
			c.OutputSchema = nil
			notes = append(notes, fmt.Sprintf("%s: tool %s: output schema is not an object schema; dropped", label, t.Name))
		}
		set[t.Name] = &c
	}
	return set, warnings, notes
}

// asMap returns a schema as a JSON object, whatever Go type carries it.
func asMap(s any) (map[string]any, bool) {
	switch v := s.(type) {
	case nil:
		return nil, false
	case map[string]any:
		return v, true
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

func objectSchema(s any) bool {
	m, ok := asMap(s)
	return ok && m["type"] == "object"
}

// normaliseInput returns the schema unchanged when its root is an object
// schema (the go-sdk server panics on anything else). Otherwise it returns
// the smallest repair: a type list containing "object", or a missing type,
// becomes "object" with every other keyword kept; anything else (a scalar
// root, a non-object JSON value) is replaced by {"type":"object"}, since
// tool arguments are always an object.
func normaliseInput(s any) (any, bool) {
	m, ok := asMap(s)
	if !ok {
		return map[string]any{"type": "object"}, true
	}
	switch typ := m["type"].(type) {
	case string:
		if typ == "object" {
			return s, false
		}
		return map[string]any{"type": "object"}, true
	case nil:
		c := maps.Clone(m)
		c["type"] = "object"
		return c, true
	case []any:
		if slices.ContainsFunc(typ, func(v any) bool { return v == "object" }) {
			c := maps.Clone(m)
			c["type"] = "object"
			return c, true
		}
	}
	return map[string]any{"type": "object"}, true
}

// sameTools reports whether two served sets would look the same to a
// session, so a restart with an unchanged tool list fires no listener.
func sameTools(a, b map[string]*mcp.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for name, x := range a {
		y, ok := b[name]
		if !ok {
			return false
		}
		// json.Marshal sorts map keys, so equal tools give equal bytes; a
		// tool that cannot be marshalled never compares equal, which errs
		// on the side of telling sessions to re-list.
		bx, errx := json.Marshal(x)
		by, erry := json.Marshal(y)
		if errx != nil || erry != nil || !bytes.Equal(bx, by) {
			return false
		}
	}
	return true
}
