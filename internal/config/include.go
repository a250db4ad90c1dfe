package config

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The config includes every harness.d/*.toml beside the config file: each
// holds [harness.NAME] tables, as the config file would. `harness new`
// writes them, so that the person's own file is never rewritten; a person
// may write them too. A harness's name is its own in the fleet whichever
// file declares it: declaring one twice is an error at both files' lines.

// IncludeDirName is the directory of included harness files, beside the
// config file.
const IncludeDirName = "harness.d"

// IncludeDir is the harness.d directory of the config at path.
func IncludeDir(path string) string {
	return filepath.Join(filepath.Dir(path), IncludeDirName)
}

// IncludeFile is the file of harness name in the harness.d of the config
// at path.
func IncludeFile(path, name string) string {
	return filepath.Join(IncludeDir(path), name+".toml")
}

// Include is one file of harness.d: Name is its base name ("w1.toml"),
// Path where it is, Data its content (nil: absent).
type Include struct {
	Name string
	Path string
	Data []byte
}

// readIncludes reads harness.d's *.toml files in name order, with over's
// in place of (or beside) the ones on disk. A missing harness.d is none.
func readIncludes(path string, over map[string]*Include) ([]*Include, error) {
	dir := IncludeDir(path)
	byName := map[string]*Include{}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{File: IncludeDirName, Msg: err.Error(), err: err}
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".toml") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		data, err := readFile(p)
		if err != nil {
			return nil, &Error{File: includeDisplay(e.Name()), Msg: err.Error(), err: err}
		}
		byName[e.Name()] = &Include{Name: e.Name(), Path: p, Data: data}
	}
	for name, inc := range over {
		if inc == nil || inc.Data == nil {
			delete(byName, name)
			continue
		}
		byName[name] = inc
	}
	out := make([]*Include, 0, len(byName))
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[n])
	}
	return out, nil
}

// includeDisplay is how errors name an included file: harness.d/NAME.toml.
func includeDisplay(name string) string {
	return IncludeDirName + "/" + name
}

// includeSource is one decoded harness.d file.
type includeSource struct {
	inc *Include
	src *source
	d   *decoder
}

// decodeIncludes parses every file, each reporting its own syntax errors.
func decodeIncludes(incs []*Include) ([]includeSource, error) {
	out := make([]includeSource, 0, len(incs))
	var errs []error
	for _, inc := range incs {
		src, err := decodeAs(includeDisplay(inc.Name), inc.Data)
		if err != nil {
			errs = flatten(errs, err)
			continue
		}
		out = append(out, includeSource{inc: inc, src: src, d: src.d})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// includeHarnesses adds the harnesses of the included files to cfg, after
// the config file's own, and returns which file each came from.
func includeHarnesses(cfg *Config, main *source, isrcs []includeSource) map[string]string {
	from := map[string]string{}
	lineOf := func(name string) string {
		if f, ok := from[name]; ok {
			return includeDisplay(filepath.Base(f))
		}
		return main.d.at([]string{"harness", name})
	}
	for _, is := range isrcs {
		d := is.d
		found := map[string]*Harness{}
		for _, k := range sortedKeys(is.src.raw) {
			v := is.src.raw[k]
			if k != "harness" {
				d.add([]string{k}, "not allowed in %s: it holds [harness.NAME] tables only", IncludeDirName)
				continue
			}
			for name, hv := range d.subtables([]string{k}, v) {
				h := d.harness(name, hv, "")
				if h == nil {
					continue
				}
				if _, dup := cfg.Harnesses[name]; dup {
					d.add([]string{"harness", name}, "harness %q is already declared at %s", name, lineOf(name))
					continue
				}
				found[name] = h
			}
		}
		for _, name := range is.src.harnessOrder(found) {
			cfg.Harnesses[name] = found[name]
			cfg.Order = append(cfg.Order, name)
			from[name] = is.inc.Path
		}
	}
	return from
}

// flatten appends err's problems to errs, one element per *Error.
func flatten(errs []error, err error) []error {
	if err == nil {
		return errs
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		if _, isOne := err.(*Error); !isOne {
			return append(errs, j.Unwrap()...)
		}
	}
	return append(errs, err)
}

// ValidHarnessName reports whether name may name a harness of the config
// file: letters, digits, "-" and "_" ("/" is a project's).
func ValidHarnessName(name string) bool {
	return harnessNameRE.MatchString(name)
}
