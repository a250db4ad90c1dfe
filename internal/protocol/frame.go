// Package protocol is the control socket's wire format and its server:
// length-prefixed frames, the hello/welcome handshake, JSON control requests
// with ids (several in flight per connection), an event subscription, and
// the hand-off of a connection to the MCP session layer as a raw byte stream,
// or of the client's own stdin and stdout (handoff.go).
//
// A frame is `uint32 big-endian length | uint8 type | payload`, where the
// length counts the type byte and the payload.
package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxFrame is the largest frame length (type byte plus payload) either side
// accepts by default.
const MaxFrame = 4 << 20

// FrameType says what a frame's payload is.
type FrameType uint8

// The frame types. Zero is deliberately unused so a zeroed header is malformed.
const (
	FrameHello    FrameType = 1 // client -> daemon, first frame: Hello
	FrameWelcome  FrameType = 2 // daemon -> client, handshake accepted: Welcome
	FrameRequest  FrameType = 3 // client -> daemon: Request
	FrameResponse FrameType = 4 // daemon -> client: Response
	FrameEvent    FrameType = 5 // daemon -> subscribed client: Event
	FrameError    FrameType = 6 // daemon -> client, connection-level failure: errcode.Body
	FrameStdio    FrameType = 7 // client -> daemon, MCP hand-off (1.1): StdioFrame, stdin and stdout in SCM_RIGHTS
	FrameEnded    FrameType = 8 // daemon -> client, the handed-off session is over: Ended

	// Attach mode (since 1.2).
	FrameOutput FrameType = 9  // daemon -> viewer: terminal output, raw bytes
	FrameInput  FrameType = 10 // viewer -> daemon: keystrokes, raw bytes
	FrameResize FrameType = 11 // viewer -> daemon: api.AttachResize
	FrameNotice FrameType = 12 // daemon -> viewer: api.AttachEvent
)

var frameNames = map[FrameType]string{
	FrameHello:    "hello",
	FrameWelcome:  "welcome",
	FrameRequest:  "request",
	FrameResponse: "response",
	FrameEvent:    "event",
	FrameError:    "error",
	FrameStdio:    "stdio",
	FrameEnded:    "ended",
	FrameOutput:   "output",
	FrameInput:    "input",
	FrameResize:   "resize",
	FrameNotice:   "notice",
}

// String returns the frame type's name, or "frame(N)" for an unknown type.
func (t FrameType) String() string {
	if n, ok := frameNames[t]; ok {
		return n
	}
	return fmt.Sprintf("frame(%d)", uint8(t))
}

// Valid reports whether t is one of the defined frame types.
func (t FrameType) Valid() bool {
	_, ok := frameNames[t]
	return ok
}

// Errors returned by ReadFrame for frames that violate the format. The
// server answers both with an invalid_argument Error frame and closes.
var (
	ErrFrameTooLarge = errors.New("frame too large")
	ErrMalformed     = errors.New("malformed frame")
)

// ReadFrame reads one frame from r. A length above max (MaxFrame when max
// <= 0) fails with ErrFrameTooLarge before any payload is read, so a peer
// cannot make us allocate it. A zero length or an unknown type fails with
// ErrMalformed. A clean end of stream before a header is io.EOF.
func ReadFrame(r io.Reader, max int) (FrameType, []byte, error) {
	if max <= 0 {
		max = MaxFrame
	}
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n == 0 {
		return 0, nil, fmt.Errorf("%w: length 0", ErrMalformed)
	}
	if uint64(n) > uint64(max) {
		return 0, nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, max)
	}
	if _, err := io.ReadFull(r, hdr[4:5]); err != nil {
		return 0, nil, fmt.Errorf("read frame type: %w", unexpectedEOF(err))
	}
	t := FrameType(hdr[4])
	if !t.Valid() {
		return t, nil, fmt.Errorf("%w: unknown type %d", ErrMalformed, hdr[4])
	}
	payload := make([]byte, n-1)
	if _, err := io.ReadFull(r, payload); err != nil {
		return t, nil, fmt.Errorf("read %s payload of %d bytes: %w", t, n-1, unexpectedEOF(err))
	}
	return t, payload, nil
}

// unexpectedEOF turns an EOF inside a frame into io.ErrUnexpectedEOF, so
// only an EOF between frames reads as a clean close.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// WriteFrame writes one frame in a single Write call, so concurrent writers
// that serialise on a mutex never interleave partial frames.
func WriteFrame(w io.Writer, t FrameType, payload []byte) error {
	buf, err := AppendFrame(make([]byte, 0, 5+len(payload)), t, payload)
	if err != nil {
		return err
	}
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write %s frame: %w", t, err)
	}
	return nil
}

// AppendFrame appends one frame to dst, for a writer that sends several
// frames in one Write.
func AppendFrame(dst []byte, t FrameType, payload []byte) ([]byte, error) {
	if uint64(len(payload))+1 > uint64(^uint32(0)) {
		return dst, fmt.Errorf("write %s frame: %w: %d bytes", t, ErrFrameTooLarge, len(payload))
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)+1))
	dst = append(dst, byte(t))
	return append(dst, payload...), nil
}
