package protocol_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/protocol"
)

// appended is an answer encoded before it is framed (JSONAppender).
type appended string

func (a appended) AppendJSON(b []byte) []byte   { return append(b, a...) }
func (a appended) MarshalJSON() ([]byte, error) { return []byte(a), nil }

// ResponseFrame writes the frame WriteFrame writes of what json.Marshal
// writes for the same Response, so a client of any version decodes it as
// before; an answer that encodes itself (JSONAppender) is framed as it
// says, into a buffer it may outgrow.
func TestResponseFrameIsJSONMarshal(t *testing.T) {
	var buf bytes.Buffer
	large := appended(`[` + strings.Repeat(`{"name":"h000","state":"running"},`, 4000) + `{}]`)
	for _, id := range []uint64{0, 1, 7, 1234567, math.MaxUint64} {
		for _, v := range []any{nil, []int{}, map[string]any{"a": []string{"<x>", "é", "&\u2028"}}, "s", 3.5, true,
			[]struct {
				N string `json:"name"`
			}{{"h000"}, {"h001"}}, appended(`[{"name":"h000"}]`), large} {
			raw, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			payload, err := json.Marshal(protocol.Response{ID: id, Result: raw})
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := protocol.WriteFrame(&want, protocol.FrameResponse, payload); err != nil {
				t.Fatal(err)
			}
			got, err := protocol.ResponseFrame(&buf, id, v)
			if err != nil || !bytes.Equal(got, want.Bytes()) {
				t.Errorf("ResponseFrame(%d, %s) = %q, %v, want %q", id, raw, got, err, want.Bytes())
			}
		}
	}
	if _, err := protocol.ResponseFrame(&buf, 1, func() {}); err == nil {
		t.Error("ResponseFrame encoded a func")
	}
}

func TestDecodeResponse(t *testing.T) {
	for _, tc := range []struct {
		payload string
		want    protocol.Response
	}{
		{`{"id":1,"result":[{"a":1},{"b":"}"}]}`, protocol.Response{ID: 1, Result: json.RawMessage(`[{"a":1},{"b":"}"}]`)}},
		{`{"id":18446744073709551615,"result":null}`, protocol.Response{ID: math.MaxUint64, Result: json.RawMessage(`null`)}},
		{`{"id":0,"result":{}}`, protocol.Response{ID: 0, Result: json.RawMessage(`{}`)}},
		// Not the canonical form: decoded by encoding/json.
		{`{"id":2,"error":{"code":"unknown_harness","message":"m"}}`,
			protocol.Response{ID: 2, Error: &errcode.Body{Code: errcode.UnknownHarness, Message: "m"}}},
		{`{"result":[1] , "id":3}`, protocol.Response{ID: 3, Result: json.RawMessage(`[1]`)}},
		{` {"id":4,"result":5}`, protocol.Response{ID: 4, Result: json.RawMessage(`5`)}},
		{`{"id":05,"result":5}`, protocol.Response{}},
		{`{"id":18446744073709551616,"result":5}`, protocol.Response{}},
	} {
		got, err := protocol.DecodeResponse([]byte(tc.payload))
		var want protocol.Response
		wantErr := json.Unmarshal([]byte(tc.payload), &want)
		if (err != nil) != (wantErr != nil) {
			t.Errorf("DecodeResponse(%s) error %v, json.Unmarshal %v", tc.payload, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeResponse(%s) = %+v, want %+v (json.Unmarshal: %+v)", tc.payload, got, tc.want, want)
		}
	}
}
