package api

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// FacadeNamespace is the namespace of the facade's harness_* tools in a
// grant, as in "harness:write". Upstream keys cannot start with it.
const FacadeNamespace = "harness"

// Scope is one entry of a grant: Class in Namespace, or in every namespace
// (the facade and every upstream) when Namespace is "".
type Scope struct {
	Namespace string
	Class     Class
}

// String renders the scope as mcp_allow writes it: "read", "github:write".
func (s Scope) String() string {
	if s.Namespace == "" {
		return string(s.Class)
	}
	return s.Namespace + ":" + string(s.Class)
}

// ParseScope parses one mcp_allow entry, CLASS or NAMESPACE:CLASS
// (docs/design/mcp.md). It checks the syntax and the class; whether the namespace
// is declared is for the configuration to say.
func ParseScope(s string) (Scope, error) {
	ns, cls, qualified := strings.Cut(s, ":")
	if !qualified {
		ns, cls = "", s
	}
	if qualified && !ValidNamespace(ns) {
		return Scope{}, fmt.Errorf("%q: invalid namespace %q (want %q or an upstream key: lowercase letters, digits and \"-\")", s, ns, FacadeNamespace)
	}
	c, err := ParseClass(cls)
	if err != nil {
		return Scope{}, fmt.Errorf("%q: %w", s, err)
	}
	return Scope{Namespace: ns, Class: c}, nil
}

// ValidNamespace reports whether ns has the syntax of an upstream key
// (which "harness" has too): lowercase letters, digits and "-".
func ValidNamespace(ns string) bool {
	if ns == "" {
		return false
	}
	for _, r := range ns {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// Grant is a parsed grant (mcp_allow, mcp_http_operator_allow): the
// namespaced classes a session may see and call. The zero Grant grants
// nothing. A Grant is immutable; share it freely.
type Grant struct {
	scopes []Scope // deduplicated, in the order written
}

// NewGrant returns the grant of scopes, duplicates dropped.
func NewGrant(scopes ...Scope) Grant {
	var g Grant
	for _, s := range scopes {
		if !slices.Contains(g.scopes, s) {
			g.scopes = append(g.scopes, s)
		}
	}
	return g
}

// DefaultGrant is mcp_allow when none is written: ["read"].
func DefaultGrant() Grant { return NewGrant(Scope{Class: Read}) }

// ParseGrant parses a list of mcp_allow entries. Every bad entry is
// reported, joined into one error.
func ParseGrant(entries []string) (Grant, error) {
	var scopes []Scope
	var errs []error
	for _, e := range entries {
		s, err := ParseScope(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		scopes = append(scopes, s)
	}
	if len(errs) > 0 {
		return Grant{}, errors.Join(errs...)
	}
	return NewGrant(scopes...), nil
}

// Allows reports whether the grant covers tools of class c in namespace.
func (g Grant) Allows(namespace string, c Class) bool {
	for _, s := range g.scopes {
		if s.Class == c && (s.Namespace == "" || s.Namespace == namespace) {
			return true
		}
	}
	return false
}

// Classes are the classes the grant covers in namespace, in Classes() order.
func (g Grant) Classes(namespace string) []Class {
	var out []Class
	for _, c := range Classes() {
		if g.Allows(namespace, c) {
			out = append(out, c)
		}
	}
	return out
}

// Empty reports whether the grant covers nothing at all.
func (g Grant) Empty() bool { return len(g.scopes) == 0 }

// Scopes returns the entries of the grant, in the order written.
func (g Grant) Scopes() []Scope { return slices.Clone(g.scopes) }

// Namespaces are the namespaces the grant names explicitly, sorted.
func (g Grant) Namespaces() []string {
	var out []string
	for _, s := range g.scopes {
		if s.Namespace != "" && !slices.Contains(out, s.Namespace) {
			out = append(out, s.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

// Strings renders the grant as mcp_allow entries; never nil.
func (g Grant) Strings() []string {
	out := make([]string, 0, len(g.scopes))
	for _, s := range g.scopes {
		out = append(out, s.String())
	}
	return out
}

// String renders the grant as a TOML array: ["read", "github:write"].
func (g Grant) String() string {
	q := make([]string, 0, len(g.scopes))
	for _, s := range g.scopes {
		q = append(q, fmt.Sprintf("%q", s.String()))
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// PerNamespace resolves the grant over namespaces (plus any the grant
// names itself): each namespace's classes, as describe shows them. A
// namespace the grant covers nothing in maps to an empty list.
func (g Grant) PerNamespace(namespaces []string) map[string][]Class {
	out := make(map[string][]Class, len(namespaces))
	for _, ns := range append(slices.Clone(namespaces), g.Namespaces()...) {
		cs := g.Classes(ns)
		if cs == nil {
			cs = []Class{}
		}
		out[ns] = cs
	}
	return out
}

// Why an upstream tool has its class (ToolClass.Why).
const (
	// WhyHint: the upstream's readOnlyHint decided (true: read, else write).
	WhyHint = "hint"
	// WhyOverride: [mcp.KEY] read_tools or write_tools decided.
	WhyOverride = "override"
	// WhyExcluded: [mcp.KEY] exclude_tools hides the tool from every session.
	WhyExcluded = "excluded"
)

// ToolClass is how one upstream tool is classified, as `mcp status --json`
// shows it under tool_classes.
type ToolClass struct {
	// Tool is the upstream's own name; Name the one sessions see (KEY__tool).
	Tool string `json:"tool"`
	Name string `json:"name"`
	// Class is read or write; empty for an excluded tool.
	Class Class `json:"class,omitempty"`
	// Why is WhyHint, WhyOverride or WhyExcluded; Rule says which
	// annotation or glob, e.g. `readOnlyHint: true`, `write_tools "get-*"`.
	Why  string `json:"why"`
	Rule string `json:"rule"`
}
