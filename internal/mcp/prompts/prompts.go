// Package prompts turns markdown files in configured directories into MCP
// prompts (docs/design/mcp.md).
//
// Each *.md file directly inside a directory is one prompt; subdirectories
// are not scanned and dot-files (editor leftovers) are ignored. Optional
// front matter between "---" lines carries description, title and
// arguments; the rest of the file is the prompt's single user message, with
// {{argument}} placeholders filled in. A file that cannot be used is skipped
// and reported as a Warning; it never fails the load.
package prompts

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxFileSize bounds a prompt file; larger files are skipped with a warning.
const MaxFileSize = 256 << 10

// Warning reports a file or directory that was skipped.
type Warning struct {
	Path    string
	Message string
}

// String renders the warning as daemon_info lists it.
func (w Warning) String() string { return "prompts: " + w.Path + ": " + w.Message }

// prompt is one loaded file.
type prompt struct {
	path        string
	title       string
	description string
	args        []*mcp.PromptArgument
	body        string
}

// Set is an immutable snapshot of the loaded prompts; a reload builds a new
// one. A nil *Set holds no prompts.
type Set struct {
	byName map[string]*prompt
	names  []string
}

// Load reads every *.md file of each directory in paths (already
// ~-expanded), in paths order and then by file name. When two files give the
// same prompt name the first is served and the other gets a warning. A
// missing or unreadable directory and an unusable file are warnings too.
func Load(paths []string) (*Set, []Warning) {
	s := &Set{byName: map[string]*prompt{}}
	var warns []Warning
	seen := map[string]bool{}
	for _, dir := range paths {
		dir = filepath.Clean(dir)
		if seen[dir] {
			continue // listed twice: not a duplicate of itself
		}
		seen[dir] = true
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			warns = append(warns, Warning{dir, "directory does not exist"})
			continue
		}
		if err != nil {
			warns = append(warns, Warning{dir, fmt.Sprintf("read directory: %v", err)})
			continue
		}
		for _, ent := range entries {
			fname := ent.Name()
			if strings.HasPrefix(fname, ".") || !strings.HasSuffix(fname, ".md") {
				continue
			}
			path := filepath.Join(dir, fname)
			name := promptName(strings.TrimSuffix(fname, ".md"))
			p, err := loadFile(path)
			if err != nil {
				warns = append(warns, Warning{path, err.Error()})
				continue
			}
			if p == nil {
				continue // a directory or other non-file named *.md
			}
			if first, dup := s.byName[name]; dup {
				warns = append(warns, Warning{path, fmt.Sprintf("prompt %q already served from %s; skipped", name, first.path)})
				continue
			}
			s.byName[name] = p
			s.names = append(s.names, name)
		}
	}
	sort.Strings(s.names)
	return s, warns
}

// promptName keeps a file's base name to the characters MCP clients accept
// in a prompt name (slash commands): letters, digits, '-' and '_'.
func promptName(base string) string {
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// loadFile reads and parses one file; it returns nil, nil for something
// that is not a regular file (a directory named x.md).
func loadFile(path string) (*prompt, error) {
	// Look before opening: opening a FIFO named x.md would block the
	// load, and with it a reload or the daemon's start.
	if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("stat: %w", err)
	} else if !st.Mode().IsRegular() {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	defer f.Close() // read-only: a close error cannot lose data
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, nil
	}
	if info.Size() > MaxFileSize {
		return nil, fmt.Errorf("file is %d bytes, over the %d byte limit; skipped", info.Size(), MaxFileSize)
	}
	// Read one byte past the bound in case the file grew since Stat.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file is over the %d byte limit; skipped", MaxFileSize)
	}
	p, err := parseFile(string(data))
	if err != nil {
		return nil, fmt.Errorf("parse: %w; skipped", err)
	}
	p.path = path
	return p, nil
}

// Names returns the prompt names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.names...)
}

// Prompts returns the prompts sorted by name. The values are fresh copies;
// callers may keep or change them.
func (s *Set) Prompts() []*mcp.Prompt {
	if s == nil {
		return nil
	}
	out := make([]*mcp.Prompt, 0, len(s.names))
	for _, name := range s.names {
		p := s.byName[name]
		mp := &mcp.Prompt{Name: name, Title: p.title, Description: p.description}
		for _, a := range p.args {
			ac := *a
			mp.Arguments = append(mp.Arguments, &ac)
		}
		out = append(out, mp)
	}
	return out
}

// Get renders a prompt: its body as one user message, each {{argument}}
// replaced by its value (an absent optional argument by ""). An unknown
// prompt, or a required argument that is absent or empty, is an error
// wrapping errcode.ErrInvalidArgument that names it. Arguments the prompt
// does not declare are ignored, and placeholders that name no declared
// argument stay as written.
func (s *Set) Get(name string, args map[string]string) (*mcp.GetPromptResult, error) {
	var p *prompt
	if s != nil {
		p = s.byName[name]
	}
	if p == nil {
		return nil, errcode.Errorf(errcode.InvalidArgument, "prompts: unknown prompt %q", name)
	}
	for _, a := range p.args {
		if a.Required && args[a.Name] == "" {
			return nil, errcode.Errorf(errcode.InvalidArgument, "prompts: prompt %q: missing required argument %q", name, a.Name)
		}
	}
	return &mcp.GetPromptResult{
		Description: p.description,
		Messages: []*mcp.PromptMessage{{
			Role:    "user",
			Content: &mcp.TextContent{Text: fill(p.body, p.args, args)},
		}},
	}, nil
}

// fill replaces {{name}} and {{ name }} for declared arguments in one pass,
// so a value that itself contains "{{x}}" is not expanded again.
func fill(body string, declared []*mcp.PromptArgument, args map[string]string) string {
	known := make(map[string]bool, len(declared))
	for _, a := range declared {
		known[a.Name] = true
	}
	var b strings.Builder
	for {
		i := strings.Index(body, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(body[i+2:], "}}")
		if j < 0 {
			break
		}
		key := strings.TrimSpace(body[i+2 : i+2+j])
		b.WriteString(body[:i])
		if known[key] {
			b.WriteString(args[key])
		} else {
			b.WriteString(body[i : i+4+j])
		}
		body = body[i+4+j:]
	}
	b.WriteString(body)
	return b.String()
}
