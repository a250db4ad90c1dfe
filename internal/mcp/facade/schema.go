package facade

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/harness-dev/harness/internal/api"
)

// inputSchema derives a tool's input schema from its op's argument type:
// jsonschema-go infers the properties and their types (an unknown property
// is refused: additionalProperties false), a field's `jsonschema` tag is its
// description, and its api.SchemaTag tag its bounds and whether it is
// required. A field hidden from the facade (`mcp:"-: why"`) is left out and
// must say why; a field of an argument type several ops share that only
// one of them reads (`mcp:"only=OP"`) is left out of the others' tools, so
// a model is not offered an argument that does nothing.
func inputSchema(args reflect.Type, op string) (json.RawMessage, error) {
	s, err := jsonschema.ForType(args, nil)
	if err != nil {
		return nil, err
	}
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	s.Required = nil
	for _, f := range argFields(args, op) {
		if f.only != "" {
			if _, ok := api.SpecOf(f.only); !ok {
				return nil, fmt.Errorf("field %s: %s only=%q names no op", f.goName, api.SchemaTag, f.only)
			}
		}
		if f.hidden {
			if f.reason == "" {
				return nil, fmt.Errorf("field %s is hidden from the facade without a reason (%s:\"-: why\")", f.goName, api.SchemaTag)
			}
			delete(s.Properties, f.name)
			s.PropertyOrder = slices.DeleteFunc(s.PropertyOrder, func(n string) bool { return n == f.name })
			continue
		}
		p := s.Properties[f.name]
		if p == nil {
			return nil, fmt.Errorf("field %s (%q) has no schema property", f.goName, f.name)
		}
		// A pointer or slice is nullable to jsonschema-go; the facade asks
		// for the value or its absence, as its schemas always did.
		if len(p.Types) == 2 && p.Types[0] == "null" {
			p.Type, p.Types = p.Types[1], nil
		}
		for _, opt := range f.opts {
			if err := applyOpt(s, p, f, opt); err != nil {
				return nil, fmt.Errorf("field %s: %s %q: %w", f.goName, api.SchemaTag, opt, err)
			}
		}
	}
	if err := checkProperties(args, op, s); err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// argField is one JSON field of an argument type.
type argField struct {
	goName, name string
	kind         reflect.Kind
	hidden       bool
	reason       string
	// only is the op whose tool alone has the field (only=OP), if any.
	only string
	opts []string
}

// argFields are the JSON fields of t as op's tool sees them: a field
// another op's only (only=OP) is hidden, with that as its reason.
func argFields(t reflect.Type, op string) []argField {
	var out []argField
	for _, sf := range reflect.VisibleFields(t) {
		if sf.Anonymous || !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := argField{goName: sf.Name, name: name, kind: sf.Type.Kind()}
		if tag, ok := sf.Tag.Lookup(api.SchemaTag); ok {
			if rest, ok := strings.CutPrefix(tag, "-"); ok {
				f.hidden = true
				f.reason = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
			} else {
				f.opts = strings.Split(tag, ",")
			}
		}
		for _, opt := range f.opts {
			if v, ok := strings.CutPrefix(strings.TrimSpace(opt), "only="); ok {
				f.only = v
			}
		}
		if f.only != "" && f.only != op {
			f.hidden, f.reason = true, "an argument of harness_"+f.only+" only"
		}
		out = append(out, f)
	}
	return out
}

// applyOpt applies one bound of api.SchemaTag to property p of object s.
func applyOpt(s, p *jsonschema.Schema, f argField, opt string) error {
	key, val, hasVal := strings.Cut(strings.TrimSpace(opt), "=")
	num := func() (*float64, error) {
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || !hasVal {
			return nil, fmt.Errorf("want a number")
		}
		return &v, nil
	}
	var err error
	switch key {
	case "required":
		s.Required = append(s.Required, f.name)
	case "only":
		// Read by argFields: the field is on this op's tool.
	case "minLength":
		var n int
		if n, err = strconv.Atoi(val); err == nil {
			p.MinLength = &n
		}
	case "minimum":
		p.Minimum, err = num()
	case "maximum":
		p.Maximum, err = num()
	case "exclusiveMinimum":
		p.ExclusiveMinimum, err = num()
	case "enum":
		for _, v := range strings.Split(val, "|") {
			p.Enum = append(p.Enum, v)
		}
	case "default":
		var raw []byte
		if f.kind == reflect.String {
			raw, err = json.Marshal(val)
		} else {
			raw = []byte(val)
			if !json.Valid(raw) {
				err = fmt.Errorf("not JSON")
			}
		}
		p.Default = raw
	default:
		err = fmt.Errorf("unknown option")
	}
	return err
}

// checkProperties holds op's schema to its argument type both ways: every
// JSON field is a property unless hidden with a reason (or another op's
// only), and every property is a field. The derivation guarantees it; the check is what a hand-edited
// or half-derived schema fails (and the test shows it does).
func checkProperties(args reflect.Type, op string, s *jsonschema.Schema) error {
	fields := map[string]bool{}
	for _, f := range argFields(args, op) {
		fields[f.name] = true
		_, has := s.Properties[f.name]
		switch {
		case f.hidden && f.reason == "":
			return fmt.Errorf("field %s is hidden without a reason", f.goName)
		case f.hidden && has:
			return fmt.Errorf("field %s is hidden (%s) but has a schema property", f.goName, f.reason)
		case !f.hidden && !has:
			return fmt.Errorf("argument %q (%s) has no schema property", f.name, f.goName)
		}
	}
	for name := range s.Properties {
		if !fields[name] {
			return fmt.Errorf("schema property %q is not an argument of %v", name, args)
		}
	}
	return nil
}
