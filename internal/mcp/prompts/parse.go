package prompts

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// parseFile splits a prompt file into front matter and body and reads the
// front matter. Unknown front-matter keys (tags, model, …) are ignored so
// that files written for other tools still load.
func parseFile(text string) (*prompt, error) {
	text = strings.TrimPrefix(text, "\ufeff")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	p := &prompt{}
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		p.body = text
		return p, nil
	}
	var front []string
	closed := false
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if l := strings.TrimRight(line, " \t"); l == "---" || l == "..." {
			closed = true
			break
		}
		front = append(front, line)
	}
	if !closed {
		return nil, fmt.Errorf("front matter: no closing \"---\" line")
	}
	root, err := parseYAML(strings.Join(front, "\n"), 2)
	if err != nil {
		return nil, fmt.Errorf("front matter: %w", err)
	}
	if err := p.readFront(root); err != nil {
		return nil, fmt.Errorf("front matter: %w", err)
	}
	// The blank line that usually follows the closing "---" is layout.
	p.body = strings.TrimLeft(rest, "\n")
	return p, nil
}

// readFront reads description, title and arguments from the front matter.
func (p *prompt) readFront(root *node) error {
	if root.kind == scalarNode && root.null {
		return nil
	}
	if root.kind != mapNode {
		return fmt.Errorf("line %d: must be a mapping of keys", root.line)
	}
	var err error
	if p.description, err = optString(root, "description"); err != nil {
		return err
	}
	if p.title, err = optString(root, "title"); err != nil {
		return err
	}
	args, ok := root.values["arguments"]
	if !ok || (args.kind == scalarNode && args.null) {
		return nil
	}
	if args.kind != seqNode {
		return fmt.Errorf("line %d: arguments: must be a list", args.line)
	}
	seen := map[string]bool{}
	for i, item := range args.items {
		a, err := readArgument(item)
		if err != nil {
			return fmt.Errorf("arguments[%d]: %w", i, err)
		}
		if seen[a.Name] {
			return fmt.Errorf("arguments[%d]: line %d: duplicate argument %q", i, item.line, a.Name)
		}
		seen[a.Name] = true
		p.args = append(p.args, a)
	}
	return nil
}

func readArgument(n *node) (*mcp.PromptArgument, error) {
	if n.kind != mapNode {
		return nil, fmt.Errorf("line %d: must be a mapping with a name", n.line)
	}
	name, err := optString(n, "name")
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fmt.Errorf("line %d: argument without a name", n.line)
	}
	if !validArgName(name) {
		return nil, fmt.Errorf("line %d: argument name %q: use letters, digits, '-' and '_'", n.line, name)
	}
	a := &mcp.PromptArgument{Name: name}
	if a.Description, err = optString(n, "description"); err != nil {
		return nil, err
	}
	if a.Title, err = optString(n, "title"); err != nil {
		return nil, err
	}
	if r, ok := n.values["required"]; ok && !r.null {
		if r.kind != scalarNode {
			return nil, fmt.Errorf("line %d: required: want true or false", r.line)
		}
		switch r.text {
		case "true", "True", "TRUE":
			a.Required = true
		case "false", "False", "FALSE":
		default:
			return nil, fmt.Errorf("line %d: required: want true or false, got %q", r.line, r.text)
		}
	}
	return a, nil
}

// validArgName keeps argument names usable inside {{…}} placeholders.
func validArgName(name string) bool {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// optString returns the scalar under key, "" when absent or null.
func optString(m *node, key string) (string, error) {
	v, ok := m.values[key]
	if !ok || (v.kind == scalarNode && v.null) {
		return "", nil
	}
	if v.kind != scalarNode {
		return "", fmt.Errorf("line %d: %s: must be a string", v.line, key)
	}
	return v.text, nil
}
