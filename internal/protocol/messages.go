package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// Version is the protocol version this build speaks, "major.minor". Peers
// must agree on the major; a minor bump only adds optional fields, ops or
// modes.
//
// 1.1 added the stdio hand-off (Hello.Handoff, Welcome.Handoff, FrameStdio,
// FrameEnded); a 1.0 peer never sees any of it. 1.2 added the attach mode
// (ModeAttach, Hello.Attach and its frames). 1.3 added Hello.Grant, the
// grant an SSH bridge (`harness bridge --grant`) gives an MCP session.
const Version = "1.3"

// AttachSince is the first version that serves ModeAttach.
const AttachSince = "1.2"

// Connection modes carried in Hello.Mode.
const (
	ModeControl = "control" // framed requests, responses and events
	ModeMCP     = "mcp"     // after the welcome, a raw newline-delimited JSON-RPC stream
	ModeAttach  = "attach"  // a harness's terminal: output and notices in, input and resize out (since 1.2)
)

// Hello is the client's first frame.
type Hello struct {
	Proto        string `json:"proto"`
	Mode         string `json:"mode"`
	Client       string `json:"client,omitempty"`
	Token        string `json:"token,omitempty"`
	AllowControl bool   `json:"allow_control,omitempty"`
	// Handoff offers, in MCP mode, to pass the client's stdin and stdout
	// to the daemon instead of copying bytes (protocol 1.1, handoff.go).
	Handoff bool `json:"handoff,omitempty"`
	// Attach says what an attach-mode connection attaches to (1.2).
	Attach *api.AttachArgs `json:"attach,omitempty"`
	// Grant, in MCP mode without a token, is the whole grant of the
	// session (mcp_allow entries): `harness bridge --grant` sets it for a
	// session from across SSH (1.3).
	Grant []string `json:"grant,omitempty"`
	// Via names the client as a relay knows it, for the audit log: the
	// SSH bridge sets "ssh:KEY-COMMENT" and drops whatever the client
	// sent. It grants nothing.
	Via string `json:"via,omitempty"`
}

// Welcome is the daemon's answer to an accepted Hello.
type Welcome struct {
	Proto   string `json:"proto"`
	Version string `json:"version"`
	PID     int    `json:"pid"`
	// Handoff accepts the Hello's offer: the client's next frame is
	// FrameStdio. Absent (a 1.0 daemon, or no offer), the connection is a
	// byte stream after the Welcome.
	Handoff bool `json:"handoff,omitempty"`
	// Bridged is set by an SSH bridge (docs/design/remote.md) on a control
	// connection, with Grant the classes its key allows: a client (the
	// page showing another host) greys out what the key may not do.
	Bridged bool     `json:"bridged,omitempty"`
	Grant   []string `json:"grant,omitempty"`
}

// Request is a control call. Args is always a JSON object by the time a
// Handler sees it ({} when the client sent none).
type Request struct {
	ID   uint64          `json:"id"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Response answers the Request with the same ID: exactly one of Result and
// Error is set.
type Response struct {
	ID     uint64          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *errcode.Body   `json:"error,omitempty"`
}

// The fixed parts of a successful Response as json.Marshal writes it:
// {"id":N,"result":R}.
const (
	responseIDPrefix     = `{"id":`
	responseResultPrefix = `,"result":`
)

// frameBufs holds the buffers answers are framed in. A list of 1,000
// harnesses is ~300 KB, which json.Marshal, the envelope and the frame
// used to copy anew, three allocations per answer.
var frameBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putFrameBuf returns buf to frameBufs unless it grew past a frame's
// bound, which only an answer refused for its size does.
func putFrameBuf(buf *bytes.Buffer) {
	if buf.Cap() <= MaxFrame+64 {
		frameBufs.Put(buf)
	}
}

// JSONAppender is an answer that encodes itself: AppendJSON appends
// exactly the bytes json.Marshal writes for it (compact, HTML escaped).
// ResponseFrame appends them to the frame as they are, where the encoder
// would check and compact a Marshaler's bytes again: ~1 ms for the
// ~300 KB list of 1,000 harnesses, which keeps its rows encoded.
type JSONAppender interface {
	AppendJSON(b []byte) []byte
}

// ResponseFrame writes into buf the whole frame of
// Response{ID: id, Result: <res as JSON>}, as WriteFrame would frame what
// json.Marshal writes for it, in one pass and no copy of the result; the
// returned frame aliases buf. The envelope's form is the one
// DecodeResponse splits without a pass over the result.
func ResponseFrame(buf *bytes.Buffer, id uint64, res any) ([]byte, error) {
	buf.Reset()
	buf.Write([]byte{0, 0, 0, 0, byte(FrameResponse)})
	buf.WriteString(responseIDPrefix)
	var n [20]byte
	buf.Write(strconv.AppendUint(n[:0], id, 10))
	buf.WriteString(responseResultPrefix)
	if a, ok := res.(JSONAppender); ok {
		buf.Write(a.AppendJSON(buf.AvailableBuffer())) // in place while it fits
	} else {
		// Encode writes what Marshal returns (HTML escaped alike) and a
		// newline, and writes nothing when it fails.
		if err := json.NewEncoder(buf).Encode(res); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteByte('}')
	frame := buf.Bytes()
	if uint64(len(frame)-4) > uint64(^uint32(0)) {
		return nil, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, len(frame)-4)
	}
	binary.BigEndian.PutUint32(frame[:4], uint32(len(frame)-4))
	return frame, nil
}

// DecodeResponse decodes a Response payload. The form ResponseFrame
// writes is split without a pass over the result: its bytes are left for
// the caller's decoder to validate (Result then aliases payload). Anything
// else goes through json.Unmarshal.
func DecodeResponse(payload []byte) (Response, error) {
	var r Response
	if id, result, ok := splitResponse(payload); ok {
		r.ID, r.Result = id, result
		return r, nil
	}
	err := json.Unmarshal(payload, &r)
	return r, err
}

// splitResponse recognises {"id":N,"result":R} with N a canonical
// unsigned integer and R not empty.
func splitResponse(payload []byte) (uint64, []byte, bool) {
	rest, ok := bytes.CutPrefix(payload, []byte(responseIDPrefix))
	if !ok {
		return 0, nil, false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || (n > 1 && rest[0] == '0') {
		return 0, nil, false
	}
	id, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	result, ok := bytes.CutPrefix(rest[n:], []byte(responseResultPrefix))
	if !ok || len(result) < 2 || result[len(result)-1] != '}' {
		return 0, nil, false
	}
	return id, result[:len(result)-1], true
}

// Major returns the major number of a "major.minor" version string.
func Major(v string) (int, error) {
	maj, minor, ok := strings.Cut(v, ".")
	if !ok {
		return 0, fmt.Errorf("protocol version %q: want major.minor", v)
	}
	n, err := strconv.Atoi(maj)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("protocol version %q: bad major", v)
	}
	if _, err := strconv.Atoi(minor); err != nil {
		return 0, fmt.Errorf("protocol version %q: bad minor", v)
	}
	return n, nil
}

// CheckVersion compares a peer's protocol version with ours. A different
// (or unreadable) major is an error wrapping errcode.ErrVersionMismatch
// whose text names both sides.
func CheckVersion(peer string) error {
	mine, err := Major(Version)
	if err != nil {
		return fmt.Errorf("own %w", err) // a broken build constant; tests catch it
	}
	theirs, err := Major(peer)
	if err != nil || theirs != mine {
		return &errcode.Remote{
			Code:    errcode.VersionMismatch,
			Message: fmt.Sprintf("daemon speaks protocol %d.x, client %s", mine, quoteIfOdd(peer)),
		}
	}
	return nil
}

// quoteIfOdd keeps a sane version bare and quotes anything else, so an
// empty or garbage version still reads clearly in the message.
func quoteIfOdd(v string) string {
	if _, err := Major(v); err == nil {
		return v
	}
	return strconv.Quote(v)
}

type helloKey struct{}

// WithHello returns ctx carrying the connection's Hello.
func WithHello(ctx context.Context, h Hello) context.Context {
	return context.WithValue(ctx, helloKey{}, h)
}

// HelloFrom returns the Hello of the connection a Handler.Call runs for, so
// a handler can tell who asks (client name, token) without a wider API.
func HelloFrom(ctx context.Context) (Hello, bool) {
	h, ok := ctx.Value(helloKey{}).(Hello)
	return h, ok
}
