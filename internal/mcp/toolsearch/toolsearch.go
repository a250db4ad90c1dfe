// Package toolsearch ranks tools for a free-text query: BM25 over a tool's
// name, description and parameters, the fields weighted (BM25F-style) so a
// word in a tool's name counts for more than the same word in its prose.
// It is pure and cheap: an index of a few hundred tools builds in well
// under a millisecond, so sessions build one per search from the tools
// their grant covers at that moment, and nothing is cached across grants.
package toolsearch

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Doc is one searchable tool.
type Doc struct {
	// Name is the client-visible name (KEY__tool, harness_x).
	Name string
	// Description is the tool's own description.
	Description string
	// Params are the names of its input parameters.
	Params []string
	// ParamText is the prose describing them (their descriptions).
	ParamText string
}

// DocOf reads a Doc from a tool's name, description and JSON input schema
// (top-level properties: their names and descriptions). A schema that does
// not parse still yields the name and description.
func DocOf(name, description string, inputSchema []byte) Doc {
	d := Doc{Name: name, Description: description}
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if json.Unmarshal(inputSchema, &s) == nil {
		var prose []string
		for k, p := range s.Properties {
			d.Params = append(d.Params, k)
			if p.Description != "" {
				prose = append(prose, p.Description)
			}
		}
		slices.Sort(d.Params)
		slices.Sort(prose)
		d.ParamText = strings.Join(prose, " ")
	}
	return d
}

// Field weights: a name says what a tool is, its description how, its
// parameters what it needs.
const (
	weightName      = 3.0
	weightParam     = 1.5
	weightDesc      = 1.0
	weightParamText = 0.4

	k1 = 1.2
	b  = 0.75
)

// Index is the BM25 index of a set of docs.
type Index struct {
	docs   []map[string]float64 // weighted term frequencies per doc
	length []float64            // weighted length per doc
	avgLen float64
	df     map[string]int
}

// New indexes docs; hits name them by position.
func New(docs []Doc) *Index {
	ix := &Index{docs: make([]map[string]float64, len(docs)), length: make([]float64, len(docs)), df: map[string]int{}}
	var total float64
	for i, d := range docs {
		tf := map[string]float64{}
		add := func(text string, w float64) {
			for _, t := range Terms(text) {
				tf[t] += w
				ix.length[i] += w
			}
		}
		add(d.Name, weightName)
		add(d.Description, weightDesc)
		add(strings.Join(d.Params, " "), weightParam)
		add(d.ParamText, weightParamText)
		for t := range tf {
			ix.df[t]++
		}
		ix.docs[i] = tf
		total += ix.length[i]
	}
	if len(docs) > 0 {
		ix.avgLen = total / float64(len(docs))
	}
	return ix
}

// Hit is one ranked doc.
type Hit struct {
	Doc   int // position in the docs given to New
	Score float64
}

// Search returns at most limit docs with a positive score for query, best
// first; ties keep the docs' order.
func (ix *Index) Search(query string, limit int) []Hit {
	weights := queryWeights(query)
	if len(weights) == 0 || limit <= 0 || len(ix.docs) == 0 {
		return nil
	}
	n := float64(len(ix.docs))
	var hits []Hit
	scores := make([]float64, len(ix.docs))
	// In a fixed order, so equal scores come out equal every time.
	for _, t := range slices.Sorted(maps.Keys(weights)) {
		qw := weights[t]
		df := ix.df[t]
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		for i, tf := range ix.docs {
			f := tf[t]
			if f == 0 {
				continue
			}
			norm := 1 - b + b*ix.length[i]/ix.avgLen
			scores[i] += qw * idf * f * (k1 + 1) / (f + k1*norm)
		}
	}
	for i, s := range scores {
		if s > 0 {
			hits = append(hits, Hit{Doc: i, Score: s})
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// Terms splits text into search terms: words split at non-alphanumerics,
// underscores and camelCase humps, lower-cased, stop words dropped, each
// reduced to a crude stem so "files", "filed" and "file" meet.
func Terms(text string) []string {
	var out []string
	for _, w := range words(text) {
		w = strings.ToLower(w)
		if stop[w] {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// words splits at anything but letters and digits, and inside a word at a
// lower-to-upper change (readTextFile -> read Text File).
func words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range text {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return out
}

// stem strips the commonest English suffixes, then a final e; it needs
// only to be the same for a query and a description, not linguistically
// right ("files", "file"; "created", "creating", "create" meet).
func stem(w string) string {
	if len(w) <= 3 {
		return w
	}
	for _, suf := range []string{"ies", "ing", "ed", "es", "s"} {
		base, ok := strings.CutSuffix(w, suf)
		if !ok || len(base) < 3 {
			continue
		}
		switch suf {
		case "ies":
			base += "y"
		case "es":
			// "boxes" -> "box", but "files" -> "file".
			if !strings.HasSuffix(base, "x") && !strings.HasSuffix(base, "ss") && !strings.HasSuffix(base, "ch") && !strings.HasSuffix(base, "sh") {
				base += "e"
			}
		case "s":
			if strings.HasSuffix(base, "s") || strings.HasSuffix(base, "u") {
				base = w // "address", "status"
			}
		}
		w = base
		break
	}
	return strings.TrimSuffix(w, "e")
}

// weightSynonym is how much a word counts that the query implies but did
// not say ("open a bug report" implies create).
const weightSynonym = 0.35

// queryWeights are the query's terms with weight 1, plus the verbs its
// verbs imply at weightSynonym: tools are named for the operations of an
// API (create, get, update…), people ask in their own words.
func queryWeights(query string) map[string]float64 {
	w := map[string]float64{}
	for _, t := range Terms(query) {
		w[t] = 1
	}
	for t := range maps.Clone(w) {
		for _, s := range synonyms()[t] {
			if w[s] < weightSynonym {
				w[s] = weightSynonym
			}
		}
	}
	return w
}

// verbGroups are the words people use for the operations APIs name
// their tools after, the operation first.
var verbGroups = [][]string{
	{"create", "new", "add", "make", "open", "post", "send", "schedule", "write", "register", "insert"},
	{"delete", "remove", "drop", "erase", "destroy", "purge"},
	{"search", "find", "lookup", "query", "look", "filter"},
	{"get", "fetch", "show", "view", "detail", "read", "retrieve", "inspect", "describe", "info"},
	{"update", "edit", "change", "modify", "rename", "set", "patch"},
	{"list", "enumerate", "browse", "all"},
	{"count", "many", "number", "total", "tally"},
	{"move", "rename", "relocate"},
}

// synonyms maps each stemmed word of a group to the group's other words.
// Built at first use: stemming them at init cost every harness process,
// the CLI's too, half a millisecond.
var synonyms = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for _, g := range verbGroups {
		var stems []string
		for _, w := range g {
			stems = append(stems, Terms(w)...)
		}
		for _, a := range stems {
			for _, b := range stems {
				if a != b && !slices.Contains(m[a], b) {
					m[a] = append(m[a], b)
				}
			}
		}
	}
	return m
})

var stop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be by can do does for from how i in into is it its
		me my of on or our so some that the their them then there these this to up use using want was we
		what when where which who will with would you your please tool tools`) {
		m[w] = true
	}
	return m
}()
