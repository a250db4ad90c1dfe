package term

// history is the scrollback: the text of lines that left the main screen,
// bounded by a line count and a byte count, whichever is reached first.
type history struct {
	maxLines, maxBytes int
	lines              []string // ring; len grows up to maxLines
	head               int      // index of the oldest line once full
	n                  int      // lines held
	bytes              int
}

func (h *history) push(s string) {
	for h.n > 0 && (h.n >= h.maxLines || h.bytes+len(s) > h.maxBytes) {
		h.dropOldest()
	}
	if h.n == len(h.lines) {
		// No free slot, so n < maxLines: grow. Lazily, because most units
		// never scroll much.
		if h.head != 0 {
			h.compact()
		}
		h.lines = append(h.lines, s)
	} else {
		h.lines[(h.head+h.n)%len(h.lines)] = s
	}
	h.n++
	h.bytes += len(s)
}

func (h *history) dropOldest() {
	h.bytes -= len(h.lines[h.head])
	h.lines[h.head] = ""
	h.head = (h.head + 1) % len(h.lines)
	h.n--
}

// compact moves the held lines to the front, so the ring can grow by append.
func (h *history) compact() {
	out := make([]string, h.n, max(h.n, cap(h.lines)))
	for i := range h.n {
		out[i] = h.lines[(h.head+i)%len(h.lines)]
	}
	h.lines, h.head = out, 0
}

// last returns up to n of the newest lines, oldest first.
func (h *history) last(n int) []string {
	n = min(n, h.n)
	out := make([]string, n)
	for i := range n {
		out[i] = h.lines[(h.head+h.n-n+i)%len(h.lines)]
	}
	return out
}

func (h *history) clear() {
	clear(h.lines)
	h.lines, h.head, h.n, h.bytes = h.lines[:0], 0, 0, 0
}
