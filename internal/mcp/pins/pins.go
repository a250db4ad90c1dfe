// Package pins keeps the pinned form of every upstream tool
// (docs/gateway.md): what the tool's description, title, schemas and
// annotations were when it was first listed or last approved, as a hash
// and as canonical text for a diff. A listing is checked against it; a
// tool that changed is held (quarantined) until the operator approves it.
//
// The pins live in one JSON file in the state dir, written atomically on
// every change, so neither a reload, an upstream restart nor a daemon
// restart resets them. A file that does not parse is set aside and never
// read as approval: every tool is then new.
package pins

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
)

// Fields are the parts of a tool a pin covers, as canonical text: the
// description and title as listed, the schemas and annotations as JSON
// with sorted keys. Annotations are covered because readOnlyHint decides
// a tool's class: flipping it would hand a write tool to read grants.
type Fields struct {
	Description  string `json:"description,omitempty"`
	Title        string `json:"title,omitempty"`
	InputSchema  string `json:"inputSchema,omitempty"`
	OutputSchema string `json:"outputSchema,omitempty"`
	Annotations  string `json:"annotations,omitempty"`
}

// Entry is one pinned tool.
type Entry struct {
	Hash     string    `json:"hash"`
	PinnedAt time.Time `json:"pinned_at"`
	Fields   Fields    `json:"fields"`
}

// Held is a tool a listing may not serve: changed since its pin, or new
// where new tools wait for approval.
type Held struct {
	State   string   // api.PinChanged or api.PinNew
	Changed []string // the fields that differ (changed only)
}

// Why says what a held tool's call answers.
func (h Held) Why() string {
	if h.State == api.PinNew {
		return "it is new since the first listing and pin = \"strict\" holds new tools"
	}
	return fmt.Sprintf("its %s changed since it was pinned", joinFields(h.Changed))
}

func joinFields(fs []string) string {
	switch len(fs) {
	case 0:
		return "definition"
	case 1:
		return fs[0]
	}
	out := ""
	for i, f := range fs {
		switch {
		case i == 0:
		case i == len(fs)-1:
			out += " and "
		default:
			out += ", "
		}
		out += f
	}
	return out
}

// Store is the pins file. Safe for concurrent use.
type Store struct {
	path string
	now  func() time.Time

	mu   sync.Mutex
	sets map[string]map[string]Entry // unit -> the upstream's own tool name
	// suspect: the file did not parse, so no upstream's first listing
	// can be told from a later one; warning says so.
	suspect bool
	warning string
}

// file is the JSON shape of the pins file.
type file struct {
	Version   int                         `json:"version"`
	Upstreams map[string]map[string]Entry `json:"upstreams"`
}

// Open reads the pins file at path (absent: no pins yet). A file that
// does not parse is renamed to path.corrupt and the store starts empty
// and suspect; Warning says so. Only an I/O error fails.
func Open(path string) (*Store, error) {
	s := &Store{path: path, now: time.Now, sets: map[string]map[string]Entry{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("pins: %w", err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil || f.Version != 1 {
		why := "unknown version"
		if err != nil {
			why = err.Error()
		}
		aside := path + ".corrupt"
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("pins: %s is corrupt (%s) and cannot be set aside: %w", path, why, rerr)
		}
		s.suspect = true
		s.warning = fmt.Sprintf("pins file %s was corrupt (%s), set aside as %s: every upstream tool is treated as new (pin = \"strict\" holds them until approved)", path, why, filepath.Base(aside))
		return s, nil
	}
	for unit, set := range f.Upstreams {
		if set == nil {
			set = map[string]Entry{}
		}
		s.sets[unit] = set
	}
	return s, nil
}

// Warning is why the store started empty ("" when the file was fine).
func (s *Store) Warning() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.warning
}

// FieldsOf is t's pinned form, and Hash its hash.
func FieldsOf(t *mcp.Tool) Fields {
	f := Fields{Description: t.Description, Title: t.Title}
	f.InputSchema = canonical(t.InputSchema)
	f.OutputSchema = canonical(t.OutputSchema)
	if t.Annotations != nil {
		f.Annotations = canonical(t.Annotations)
	}
	return f
}

// canonical is v as JSON with sorted keys and no spaces ("" for nil). A
// value that does not marshal still yields something stable.
func canonical(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil || generic == nil {
		return string(b)
	}
	b, _ = json.Marshal(generic) // maps marshal with sorted keys
	return string(b)
}

// Hash is the hash of f: sha256 over its canonical JSON.
func (f Fields) Hash() string {
	b, _ := json.Marshal(f)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// changed names the fields that differ between pinned and current.
func changed(pinned, current Fields) []string {
	var out []string
	for _, c := range []struct {
		name string
		a, b string
	}{
		{"description", pinned.Description, current.Description},
		{"title", pinned.Title, current.Title},
		{"inputSchema", pinned.InputSchema, current.InputSchema},
		{"outputSchema", pinned.OutputSchema, current.OutputSchema},
		{"annotations", pinned.Annotations, current.Annotations},
	} {
		if c.a != c.b {
			out = append(out, c.name)
		}
	}
	return out
}

// Check compares unit's listing (the upstream's own tool names) with its
// pins under mode and returns the tools it may not serve. It records what
// mode accepts: every tool of a first listing, and in "changes" mode a
// tool new since. A changed tool keeps its old pin. The error is a
// failed write; held is right either way.
func (s *Store) Check(unit string, mode api.PinMode, tools map[string]*mcp.Tool) (held map[string]Held, err error) {
	if mode == api.PinOff {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	set, exists := s.sets[unit]
	first := !exists && !s.suspect
	dirty := !exists
	if set == nil {
		set = map[string]Entry{}
		s.sets[unit] = set
	}
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		cur := FieldsOf(tools[name])
		hash := cur.Hash()
		pin, ok := set[name]
		switch {
		case ok && pin.Hash == hash:
		case ok:
			if held == nil {
				held = map[string]Held{}
			}
			held[name] = Held{State: api.PinChanged, Changed: changed(pin.Fields, cur)}
		case first || mode != api.PinStrict:
			set[name] = Entry{Hash: hash, PinnedAt: s.now().UTC(), Fields: cur}
			dirty = true
		default:
			if held == nil {
				held = map[string]Held{}
			}
			held[name] = Held{State: api.PinNew}
		}
	}
	if dirty {
		err = s.saveLocked()
	}
	return held, err
}

// Approve pins the listed form of each of names (the upstream's own tool
// names, each in tools).
func (s *Store) Approve(unit string, tools map[string]*mcp.Tool, names []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.sets[unit]
	if set == nil {
		set = map[string]Entry{}
		s.sets[unit] = set
	}
	for _, n := range names {
		t, ok := tools[n]
		if !ok {
			return fmt.Errorf("pins: %s: no tool %q listed", unit, n)
		}
		f := FieldsOf(t)
		set[n] = Entry{Hash: f.Hash(), PinnedAt: s.now().UTC(), Fields: f}
	}
	return s.saveLocked()
}

// List is unit's pin set against its listing: every pinned tool, and
// every listed tool held back; with diff, each changed field's texts.
func (s *Store) List(unit string, tools map[string]*mcp.Tool, held map[string]Held, diff bool) []api.ToolPin {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.sets[unit]
	names := map[string]bool{}
	for n := range set {
		names[n] = true
	}
	for n := range held {
		names[n] = true
	}
	out := []api.ToolPin{}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		pin, pinned := set[n]
		p := api.ToolPin{Tool: n, State: api.PinPinned}
		if pinned {
			p.Hash, p.PinnedAt = pin.Hash, pin.PinnedAt
		}
		if h, ok := held[n]; ok {
			p.State, p.Changed = h.State, h.Changed
			if t := tools[n]; t != nil {
				cur := FieldsOf(t)
				p.Current = cur.Hash()
				if diff {
					p.Diff = fieldDiffs(pin.Fields, cur)
				}
			}
		}
		out = append(out, p)
	}
	return out
}

func fieldDiffs(pinned, current Fields) []api.FieldDiff {
	get := map[string]func(Fields) string{
		"description":  func(f Fields) string { return f.Description },
		"title":        func(f Fields) string { return f.Title },
		"inputSchema":  func(f Fields) string { return pretty(f.InputSchema) },
		"outputSchema": func(f Fields) string { return pretty(f.OutputSchema) },
		"annotations":  func(f Fields) string { return pretty(f.Annotations) },
	}
	var out []api.FieldDiff
	for _, name := range changed(pinned, current) {
		out = append(out, api.FieldDiff{Field: name, Pinned: get[name](pinned), Current: get[name](current)})
	}
	return out
}

// pretty indents canonical JSON so a diff reads line by line.
func pretty(s string) string {
	var b bytes.Buffer
	if s == "" || json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

// saveLocked writes the file atomically. Caller holds s.mu.
func (s *Store) saveLocked() error {
	b, err := json.MarshalIndent(file{Version: 1, Upstreams: s.sets}, "", "  ")
	if err != nil {
		return fmt.Errorf("pins: encode: %w", err)
	}
	return writeAtomic(s.path, b)
}

// writeAtomic writes data beside path and renames it over path, so a
// crash leaves the old file or the new one, never half of one.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("pins: write %s: %w", path, err)
	}
	name := tmp.Name()
	defer os.Remove(name) // no-op after the rename
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		return fmt.Errorf("pins: write %s: %w", path, err)
	}
	return nil
}
