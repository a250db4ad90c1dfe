package prompts

import "testing"

func TestParseFileFrontMatterSubset(t *testing.T) {
	type arg struct {
		name, desc string
		req        bool
	}
	cases := []struct {
		name, in   string
		desc, body string
		args       []arg
	}{
		{name: "no front matter", in: "hello\n---\n", body: "hello\n---\n"},
		{name: "empty front matter", in: "---\n---\nbody", body: "body"},
		{name: "dots close", in: "---\ndescription: d\n...\n\n\nbody\n", desc: "d", body: "body\n"},
		{name: "crlf and bom", in: "\ufeff---\r\ndescription: d\r\n---\r\nline1\r\nline2\r\n", desc: "d", body: "line1\nline2\n"},
		{name: "apostrophe and hash in plain", in: "---\ndescription: don't use C# here # note\n---\n", desc: "don't use C# here"},
		{name: "double-quoted escapes", in: "---\ndescription: \"tab\\there \\\"q\\\" \\u00e9 # not a comment\" # comment\n---\n", desc: "tab\there \"q\" é # not a comment"},
		{name: "folded plain scalar", in: "---\ndescription: a long\n  description here\n---\n", desc: "a long description here"},
		{name: "literal block", in: "---\ndescription: |\n  line one\n    indented\n\n  after blank\n\narguments: []\n---\n", desc: "line one\n  indented\n\nafter blank\n"},
		{name: "folded block strip", in: "---\ndescription: >-\n  one\n  two\n\n  three\n---\n", desc: "one two\nthree"},
		{name: "null description", in: "---\ndescription: ~\n---\n"},
		{
			name: "sequence at key indent",
			in:   "---\narguments:\n- name: a\n  required: true\n- name: b\n---\n",
			args: []arg{{"a", "", true}, {"b", "", false}},
		},
		{
			name: "item map on next line",
			in:   "---\narguments:\n  -\n    name: a\n    description: \"x: y\"\n---\n",
			args: []arg{{"a", "x: y", false}},
		},
		{
			name: "flow mapping inside block list",
			in:   "---\narguments:\n  - {name: a, description: 'b, c', required: True}\n---\n",
			args: []arg{{"a", "b, c", true}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parseFile(tc.in)
			if err != nil {
				t.Fatalf("parseFile: %v", err)
			}
			if p.description != tc.desc {
				t.Errorf("description = %q, want %q", p.description, tc.desc)
			}
			if tc.body != "" && p.body != tc.body {
				t.Errorf("body = %q, want %q", p.body, tc.body)
			}
			if len(p.args) != len(tc.args) {
				t.Fatalf("args = %+v, want %+v", p.args, tc.args)
			}
			for i, a := range p.args {
				if a.Name != tc.args[i].name || a.Description != tc.args[i].desc || a.Required != tc.args[i].req {
					t.Errorf("arg %d = %+v, want %+v", i, *a, tc.args[i])
				}
			}
		})
	}
}

func TestParseFileRejects(t *testing.T) {
	for name, in := range map[string]string{
		"unterminated":       "---\ndescription: x\n",
		"unclosed flow":      "---\narguments: [{name: a}\n---\n",
		"unclosed quote":     "---\ndescription: \"abc\n---\n",
		"bad escape":         "---\ndescription: \"\\q\"\n---\n",
		"text after quote":   "---\ndescription: \"a\" b\n---\n",
		"no colon":           "---\njust words\n---\n",
		"tab indent":         "---\narguments:\n\t- name: a\n---\n",
		"args not list":      "---\narguments: a\n---\n",
		"arg not map":        "---\narguments: [a]\n---\n",
		"empty name":         "---\narguments: [{name: ''}]\n---\n",
		"bad arg name":       "---\narguments: [{name: a b}]\n---\n",
		"duplicate arg":      "---\narguments: [{name: a}, {name: a}]\n---\n",
		"description list":   "---\ndescription: [a]\n---\n",
		"required not bool":  "---\narguments: [{name: a, required: [x]}]\n---\n",
		"dedented block":     "---\ndescription: |\n    a\n  b\n---\n",
		"key after list end": "---\narguments:\n  - name: a\n   x: 1\n---\n",
	} {
		if p, err := parseFile(in); err == nil {
			t.Errorf("%s: parsed as %+v", name, p)
		}
	}
}

// FuzzParseFile checks that no input panics and that whatever parses holds
// usable, unique argument names.
func FuzzParseFile(f *testing.F) {
	f.Add(reviewMD)
	f.Add("---\narguments: [{name: a, required: true}, {b}]\n---\n{{a}}")
	f.Add("---\ndescription: |+\n  x\n\n---\n")
	f.Add("---\n- - a\n  - b\n---\n")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := parseFile(in)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, a := range p.args {
			if a.Name == "" || !validArgName(a.Name) || seen[a.Name] {
				t.Fatalf("bad argument %q in %+v", a.Name, p.args)
			}
			seen[a.Name] = true
		}
		args := map[string]string{}
		for _, a := range p.args {
			args[a.Name] = "v"
		}
		if out := fill(p.body, p.args, args); len(p.args) == 0 && out != p.body {
			t.Fatalf("fill changed a body without arguments: %q -> %q", p.body, out)
		}
	})
}
