package broker

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/mcp/jsonl"
)

// TestScenario_ARemoteAnswerOverTheBoundBecomesAnErrorForItsCall: an
// event stream's events under the bound pass whole and in order; one over
// it is read past and replaced by an error answer for its id (found after
// the result, in a "data:" line without its space, across CRLF line ends,
// cut anywhere by the reads); one with no id is dropped and noted on the
// call. A JSON body over the bound becomes the error answer; without an
// id it fails the read.
func TestScenario_ARemoteAnswerOverTheBoundBecomesAnErrorForItsCall(t *testing.T) {
	big := strings.Repeat("z", 5000)
	over := "event: message\r\ndata:{\"jsonrpc\":\"2.0\",\"result\":{\"t\":\"" + big + "\"},\r\ndata: \"id\":7}\r\n\r\n"
	stream := "event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\n" +
		over +
		": keep-alive\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"t\":\"" + big + "\"}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n\n"
	st := &callStatus{}
	out, err := io.ReadAll(iotestHalf(newHeldBody(io.NopCloser(strings.NewReader(stream)), 1000, true, st)))
	if err != nil {
		t.Fatal(err)
	}
	want := "event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\n" +
		"event: message\ndata: " + string(jsonl.TooLargeAnswer([]byte("7"), len(over), 1000)) + "\n\n" +
		": keep-alive\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n\n"
	if string(out) != want {
		t.Fatalf("the stream handed on:\n%q\nwant\n%q", out, want)
	}
	if st.refused() != 1000 {
		t.Errorf("the dropped event without an id was not noted: %d", st.refused())
	}

	body := `{"result":{"t":"` + big + `"},"jsonrpc":"2.0","id":"a"}`
	out, err = io.ReadAll(newHeldBody(io.NopCloser(strings.NewReader(body)), 1000, false, nil))
	if err != nil || string(out) != string(jsonl.TooLargeAnswer([]byte(`"a"`), len(body), 1000)) {
		t.Fatalf("a JSON body over the bound: %q, %v", out, err)
	}
	out, err = io.ReadAll(newHeldBody(io.NopCloser(strings.NewReader(`{"result":{}, "id":3}`)), 1000, false, nil))
	if err != nil || string(out) != `{"result":{}, "id":3}` {
		t.Fatalf("a JSON body under the bound: %q, %v", out, err)
	}
	_, err = io.ReadAll(newHeldBody(io.NopCloser(strings.NewReader(`{"result":"`+big+`"}`)), 1000, false, nil))
	if !errors.Is(err, errTooLarge) {
		t.Fatalf("a JSON body over the bound with no id: %v", err)
	}
}

// TestScenario_AStreamThatEndsInsideAnEventOverTheBoundStillAnswersItsCall:
// an event stream that ends (the server closed it) while an event over
// the bound is being read past hands on the error answer for its id: the
// call is answered now, not at its timeout.
func TestScenario_AStreamThatEndsInsideAnEventOverTheBoundStillAnswersItsCall(t *testing.T) {
	big := strings.Repeat("z", 5000)
	cut := "data: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"t\":\"" + big
	out, err := io.ReadAll(iotestHalf(newHeldBody(io.NopCloser(strings.NewReader(cut)), 1000, true, &callStatus{})))
	if err != nil {
		t.Fatal(err)
	}
	want := "event: message\ndata: " + string(jsonl.TooLargeAnswer([]byte("9"), len(cut), 1000)) + "\n\n"
	if string(out) != want {
		t.Fatalf("the cut stream handed on:\n%q\nwant\n%q", out, want)
	}
}

// iotestHalf reads at most 7 bytes at a time, so pieces cut lines anywhere.
func iotestHalf(r io.Reader) io.Reader { return smallReads{r} }

type smallReads struct{ r io.Reader }

func (s smallReads) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), 7)]) }
