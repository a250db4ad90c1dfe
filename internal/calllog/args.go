package calllog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// ArgStringBound is where a kept argument string (or object key) is cut.
const ArgStringBound = 256

// argsBound caps the kept arguments of one call once their strings are
// cut; a larger object (many keys, long arrays) is replaced by a note.
const argsBound = 16 << 10

// cutArgs returns the arguments to store: every string cut at
// ArgStringBound, the whole at most argsBound. It runs on the writer
// goroutine, never on the call path.
func cutArgs(raw json.RawMessage, mask func(string) string) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers stay as written
	var v any
	if err := dec.Decode(&v); err != nil {
		return note(fmt.Sprintf("arguments are not JSON (%d bytes)", len(raw)))
	}
	if mask == nil {
		mask = func(s string) string { return s }
	}
	b, err := json.Marshal(cutValue(v, mask))
	if err != nil {
		return note(fmt.Sprintf("arguments do not encode (%d bytes)", len(raw)))
	}
	if len(b) > argsBound {
		return note(fmt.Sprintf("arguments of %d bytes after cutting strings, over %d", len(b), argsBound))
	}
	return b
}

// note stands in for arguments that are not kept.
func note(why string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"_omitted": why}) // a string map always encodes
	return b
}

// cutValue masks and cuts every string of v (masked first, so a secret
// cut in half is still found whole).
func cutValue(v any, mask func(string) string) any {
	switch x := v.(type) {
	case string:
		return cutString(mask(x), ArgStringBound)
	case []any:
		for i := range x {
			x[i] = cutValue(x[i], mask)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[cutString(mask(k), ArgStringBound)] = cutValue(e, mask)
		}
		return out
	}
	return v
}

// cutString keeps at most bound bytes of s, on a rune boundary, and says
// how long s was.
func cutString(s string, bound int) string {
	if len(s) <= bound {
		return s
	}
	i := bound
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return fmt.Sprintf("%s…(cut, %d bytes)", s[:i], len(s))
}
