package calllog

import (
	"cmp"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// Names under which calls are counted when their own name is not kept.
const (
	// UnknownTool counts calls refused as unknown_tool or unknown_namespace:
	// a client may call any name, and each must not cost a new series.
	UnknownTool = "(unknown)"
	// OtherTool counts calls past MaxSeries distinct tools.
	OtherTool = "(other)"
)

// MaxSeries bounds the distinct (kind, project, tool) the stats keep by
// name; calls to further tools count under OtherTool.
const MaxSeries = 512

// Key is what one set of stats counts: calls of one kind (api.CallTool or
// api.CallPrompt) to one tool, from sessions of one project ("" global).
type Key struct {
	Kind, Project, Tool string
}

// stats are the counters since Open, updated on the call path.
type stats struct {
	mu    sync.Mutex
	by    map[Key]*counter
	named int // keys other than OtherTool
}

func newStats() stats { return stats{by: map[Key]*counter{}} }

// counter is the stats of one Key.
type counter struct {
	calls     uint64
	errors    map[string]uint64
	reqBytes  uint64
	respBytes uint64
	hist      histogram
}

func (s *stats) add(r *api.CallRecord) {
	k := Key{Kind: r.Kind, Project: r.Project, Tool: r.Tool}
	switch r.Outcome {
	case string(errcode.UnknownTool):
		// A known namespace keeps it: its upstream's row counts the miss.
		if key, _, ok := strings.Cut(r.Tool, "__"); ok {
			k.Tool = key + "__" + UnknownTool
		} else {
			k.Tool = UnknownTool
		}
	case string(errcode.UnknownNamespace):
		k.Tool = UnknownTool
	}
	d := time.Duration(r.DurationMS * float64(time.Millisecond))
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.by[k]
	if c == nil {
		if s.named >= MaxSeries {
			k.Tool = OtherTool
			c = s.by[k]
		} else {
			s.named++
		}
		if c == nil {
			c = &counter{}
			s.by[k] = c
		}
	}
	c.calls++
	if r.Outcome != api.OutcomeOK {
		if c.errors == nil {
			c.errors = map[string]uint64{}
		}
		c.errors[r.Outcome]++
	}
	c.reqBytes += uint64(max(r.RequestBytes, 0))
	c.respBytes += uint64(max(r.ResponseBytes, 0))
	c.hist.add(uint64(max(d, 0)))
}

// merged sums the counters whose key matches, by (kind, tool).
func (s *stats) merged(match func(kind, project, tool string) bool) map[Key]*counter {
	out := map[Key]*counter{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range s.by {
		if match != nil && !match(k.Kind, k.Project, k.Tool) {
			continue
		}
		mk := Key{Kind: k.Kind, Tool: k.Tool}
		m := out[mk]
		if m == nil {
			m = &counter{}
			out[mk] = m
		}
		m.merge(c)
	}
	return out
}

func (c *counter) merge(o *counter) {
	c.calls += o.calls
	c.reqBytes += o.reqBytes
	c.respBytes += o.respBytes
	for code, n := range o.errors {
		if c.errors == nil {
			c.errors = map[string]uint64{}
		}
		c.errors[code] += n
	}
	c.hist.merge(&o.hist)
}

func (c *counter) view() api.CallStats {
	return api.CallStats{
		Calls:  c.calls,
		Errors: maps.Clone(nonNilMap(c.errors)),
		P50MS:  c.hist.quantile(0.5) / 1e6,
		P99MS:  c.hist.quantile(0.99) / 1e6,
	}
}

func nonNilMap(m map[string]uint64) map[string]uint64 {
	if m == nil {
		return map[string]uint64{}
	}
	return m
}

// Stats returns the stats of the calls whose kind, caller's project and
// tool match (nil matches all): their total and each tool's, ordered by
// kind and tool.
func (l *Log) Stats(match func(kind, project, tool string) bool) (api.CallStats, []api.ToolCallStats) {
	byTool := l.stats.merged(match)
	var total counter
	tools := make([]api.ToolCallStats, 0, len(byTool))
	for k, c := range byTool {
		total.merge(c)
		tools = append(tools, api.ToolCallStats{Kind: k.Kind, Tool: k.Tool, CallStats: c.view()})
	}
	slices.SortFunc(tools, func(a, b api.ToolCallStats) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Tool, b.Tool))
	})
	return total.view(), tools
}

// Info describes the log for daemon_info.
func (l *Log) Info() api.CallLogInfo {
	_, tools := l.Stats(nil)
	return api.CallLogInfo{
		Path: l.dir, Args: l.KeepArgs(), Written: l.Written(), Dropped: l.Dropped(), Tools: tools,
	}
}

// Namespace is where a tool belongs: "harness" for the facade, KEY for an
// upstream's KEY__tool, "" for prompts and names that are neither.
func Namespace(kind, tool string) string {
	if kind != api.CallTool {
		return ""
	}
	if key, _, ok := strings.Cut(tool, "__"); ok {
		return key
	}
	if strings.HasPrefix(tool, "harness_") {
		return "harness"
	}
	return ""
}

// histogram counts durations (ns) in log-linear buckets: exact below 16 ns,
// then 8 buckets per power of two, so a quantile read from it is within
// 1/16 (6.25%) of a duration that was recorded.
type histogram struct {
	counts   [numBuckets]uint64
	n        uint64
	sum      uint64 // ns
	min, max uint64
}

const (
	subBits    = 3
	linearTop  = 16 // values below are their own bucket
	numBuckets = linearTop + (64-4)<<subBits
)

func bucketOf(v uint64) int {
	if v < linearTop {
		return int(v)
	}
	e := bits.Len64(v) - 1 // >= 4
	sub := int(v>>(e-subBits)) & (1<<subBits - 1)
	return linearTop + (e-4)<<subBits + sub
}

// bucketMid is the middle of bucket i's range.
func bucketMid(i int) float64 {
	if i < linearTop {
		return float64(i)
	}
	j := i - linearTop
	e := j>>subBits + 4
	sub := uint64(j & (1<<subBits - 1))
	lo := (1<<subBits + sub) << (e - subBits)
	return float64(lo) + float64(uint64(1)<<(e-subBits))/2
}

func (h *histogram) add(v uint64) {
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.n++
	h.sum += v
}

func (h *histogram) merge(o *histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// quantile is the q-quantile in ns (0 with no data): the middle of the
// bucket holding the ceil(q·n)-th smallest value, kept within [min, max].
func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(h.n))), 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(max(bucketMid(i), float64(h.min)), float64(h.max))
		}
	}
	return float64(h.max)
}
