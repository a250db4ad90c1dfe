package broker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/harness-dev/harness/internal/mcp/jsonl"
)

// A remote upstream's answers are bounded as they stream in, as a process
// upstream's are by its jsonl transport (RefuseOversized): a JSON body, or
// one event of an event stream, is held in blocks (never copied while it
// grows) until it ends; one over max_result_bytes is read past without
// being kept and handed on as an error answer for its id (CodeTooLarge),
// so the call it answered fails with upstream_unavailable and the session
// goes on. The go-sdk would otherwise read a JSON body with io.ReadAll and
// an event into a growing buffer, peaking the daemon at several times the
// answer.

// errTooLarge is the read error of a body past its bound whose answer
// names no call to hand an error to.
var errTooLarge = errors.New("the answer exceeds max_result_bytes")

// heldBody is a response body handed on one whole message at a time.
type heldBody struct {
	body  io.ReadCloser
	r     *bufio.Reader
	limit int
	sse   bool
	st    *callStatus // the call's, when the request was a call's; may be nil

	out  [][]byte // ready to hand on
	err  error    // returned once out is drained
	held jsonl.Blocks

	// While a message over the limit is read past:
	skipping bool
	size     int
	scan     jsonl.IDScanner
	lines    sseData
}

func newHeldBody(body io.ReadCloser, limit int, sse bool, st *callStatus) *heldBody {
	return &heldBody{body: body, r: bufio.NewReaderSize(body, 32<<10), limit: limit, sse: sse, st: st}
}

// Close implements io.Closer.
func (h *heldBody) Close() error { return h.body.Close() }

// Read implements io.Reader.
func (h *heldBody) Read(p []byte) (int, error) {
	for {
		for len(h.out) > 0 {
			if len(h.out[0]) == 0 {
				h.out = h.out[1:]
				continue
			}
			n := copy(p, h.out[0])
			h.out[0] = h.out[0][n:]
			return n, nil
		}
		if h.err != nil {
			return 0, h.err
		}
		h.fill()
	}
}

// fill reads until a message is ready to hand on (h.out) or the body ends
// (h.err).
func (h *heldBody) fill() {
	for h.err == nil && len(h.out) == 0 {
		line, err := h.r.ReadSlice('\n')
		if len(line) > 0 {
			h.take(line)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
		case err != nil:
			// The body ended: a message being read past is refused here
			// too (an event stream cut inside one would otherwise leave
			// its call to wait for its timeout).
			if h.skipping {
				h.refuse()
			} else {
				h.out = append(h.out, h.held.Take()...)
			}
			if h.err == nil {
				h.err = err
			}
		case h.sse && isBlank(line):
			// The event ended.
			if h.skipping {
				h.refuse()
			} else {
				h.out = h.held.Take()
			}
		}
	}
}

// take holds or skips one piece of the message being read.
func (h *heldBody) take(b []byte) {
	if !h.skipping {
		if h.held.Len()+len(b) <= h.limit {
			h.held.Write(b)
			return
		}
		h.skipping, h.size = true, h.held.Len()
		h.scan, h.lines = jsonl.IDScanner{}, sseData{}
		h.held.Each(h.feed)
		h.held.Reset()
	}
	h.size += len(b)
	h.feed(b)
}

// feed gives the scanner the JSON text of a piece: all of a JSON body, the
// data lines of an event.
func (h *heldBody) feed(b []byte) {
	if !h.sse {
		h.scan.Feed(b)
		return
	}
	h.lines.each(b, h.scan.Feed)
}

// refuse ends a message read past: its answer's call gets an error answer
// in its place, in the framing of the body.
func (h *heldBody) refuse() {
	id := h.scan.ID()
	size := h.size
	h.skipping, h.size = false, 0
	if id == nil || h.scan.Request() {
		// No call waits on it by id: nothing to hand on but the failure.
		if h.st != nil {
			h.st.tooLarge(h.limit)
		}
		if !h.sse {
			h.err = fmt.Errorf("%w (%d bytes)", errTooLarge, h.limit)
		}
		return
	}
	answer := jsonl.TooLargeAnswer(id, size, h.limit)
	if h.sse {
		answer = append(append([]byte("event: message\ndata: "), answer...), "\n\n"...)
	}
	h.out = append(h.out, answer)
}

func isBlank(line []byte) bool { return len(bytes.TrimRight(line, "\r\n")) == 0 }

// sseData picks the data field values out of event stream text fed in
// pieces (lines may be cut anywhere).
type sseData struct {
	mid    bool   // inside a line
	head   []byte // the line's first bytes, until its field is known
	inData bool   // the line is a data line; its value is being passed on
	skip   bool   // the line is some other field
}

func (d *sseData) each(b []byte, f func([]byte)) {
	for len(b) > 0 {
		if !d.mid {
			d.mid, d.head, d.inData, d.skip = true, d.head[:0], false, false
		}
		i := bytes.IndexAny(b, "\r\n")
		end := len(b)
		if i >= 0 {
			end = i
		}
		seg := b[:end]
		switch {
		case d.inData:
			f(seg)
		case d.skip:
		default:
			k := min(6-len(d.head), len(seg))
			d.head = append(d.head, seg[:k]...)
			switch {
			case bytes.HasPrefix(d.head, []byte("data: ")):
				d.inData = true
				f(seg[k:])
			case len(d.head) >= 5 && string(d.head[:5]) == "data:" && (len(d.head) == 6 || i >= 0):
				// "data:" without its space: the value starts at once.
				d.inData = true
				f(d.head[5:])
				f(seg[k:])
			case len(d.head) == 6 || (i >= 0 && len(d.head) < 6):
				d.skip = true
			}
		}
		if i < 0 {
			return
		}
		f([]byte("\n")) // a data value's lines join with a newline; harmless elsewhere
		d.mid = false
		b = b[i+1:]
	}
}

// tooLarge notes that an answer to the call was refused at limit bytes
// with no id to answer it by.
func (s *callStatus) tooLarge(limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refusedAt = limit
}

// refused is the bound an answer to the call was refused at; 0 if none.
func (s *callStatus) refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusedAt
}
