package broker

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
)

// Progress counting on Streamable HTTP. Over stdio the broker counts a
// call's progress notifications as the client reads them (countingConn),
// so that Call can wait for the ones read before the result (drain). The
// go-sdk's HTTP connection cannot be wrapped that way (the client tells it
// about the session through an unexported method a wrapper would hide, and
// without it there is no standalone SSE stream, hence no list_changed), so
// the count is taken one layer down: in the event stream bodies, as the
// client's reader pulls them through. A notification is counted before the
// client can have decoded it, and every notification the server sent
// before its result is in bytes read before the result, so the count is
// complete when CallTool returns, as it is over stdio.

// maxSSEEvent bounds what an event may buffer here; a larger one passes
// through uncounted (the client has its own bound).
const maxSSEEvent = 16 << 20

// sseCounter passes an event stream through unchanged and hands count the
// params of every notifications/progress event in it.
type sseCounter struct {
	io.ReadCloser
	count    func(params []byte)
	line     []byte // the line being read
	data     []byte // the data lines of the event being read
	overflow bool   // the current event is too large to look at
}

// Read implements io.Reader.
func (s *sseCounter) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.feed(p[:n])
	return n, err
}

func (s *sseCounter) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.keep(b)
			return
		}
		s.keep(b[:i])
		b = b[i+1:]
		s.onLine(bytes.TrimSuffix(s.line, []byte("\r")))
		s.line = s.line[:0]
	}
}

func (s *sseCounter) keep(b []byte) {
	if len(s.line)+len(b) > maxSSEEvent {
		s.overflow = true
		return
	}
	s.line = append(s.line, b...)
}

func (s *sseCounter) onLine(line []byte) {
	if len(line) == 0 { // the event is complete
		if !s.overflow && len(s.data) > 0 {
			s.event(s.data)
		}
		s.data, s.overflow = s.data[:0], false
		return
	}
	v, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok || s.overflow {
		return // event, id, retry and comments carry no message
	}
	v = bytes.TrimPrefix(v, []byte(" "))
	if len(s.data)+len(v)+1 > maxSSEEvent {
		s.overflow = true
		return
	}
	if len(s.data) > 0 {
		s.data = append(s.data, '\n')
	}
	s.data = append(s.data, v...)
}

func (s *sseCounter) event(data []byte) {
	if !bytes.Contains(data, []byte("notifications/progress")) {
		return // the common case, without decoding
	}
	var m struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &m) != nil || m.Method != "notifications/progress" {
		return
	}
	s.count(m.Params)
}

// isEventStream reports whether a Content-Type is text/event-stream.
func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}
