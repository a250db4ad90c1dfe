package jsonl

import (
	"bytes"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzDecode holds decode to the straightforward decoder it replaced:
// same verdict, same message, on any input.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2,{"b":"}"}]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
		`{"jsonrpc":"2.0","id":"a\u0041","result":{"content":[{"type":"text","text":"x\"]}"}]}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no","data":null}}`,
		`{"jsonrpc":"2.0","id":null,"method":null}`,
		`{"jsonrpc":"2\u002e0","id":1e3,"method":"m","method":"n"}`,
		`{"jsonrpc":"2.0","id":1,"result":null,"error":null}`,
		` { "jsonrpc" : "2.0" , "id" : -0.5 , "Method" : "x" , "result" : [ ] } `,
		`{"jsonrpc":"2.0","id":{},"method":"x"}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}`,
		`["not","an","object"]`,
		`"string"`,
		`{"jsonrpc":"2.0",`,
		`{"jsonrpc":"2.0","id":1,"method":"x"} trailing`,
		`{"jsonrpc":"2.0","id":true,"error":{"code":"x"}}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"x"}`,
		`{"\u006aSONrpc":"2.0","jsonrpc":"2.0","i\u0064":3,"result":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.TrimSpace(data)
		if len(data) == 0 {
			return
		}
		got, gotErr := decode(data)
		want, wantErr := decodeReference(data)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: decode err %v, reference err %v", data, gotErr, wantErr)
		}
		if gotErr != nil {
			if !errors.Is(gotErr, ErrInvalidMessage) {
				t.Fatalf("%q: error %v is not ErrInvalidMessage", data, gotErr)
			}
			if incomplete(gotErr) != incomplete(wantErr) {
				t.Fatalf("%q: incomplete %v vs reference %v", data, gotErr, wantErr)
			}
			return
		}
		switch w := want.(type) {
		case *jsonrpc.Request:
			g, ok := got.(*jsonrpc.Request)
			if !ok || g.ID != w.ID || g.Method != w.Method || !bytes.Equal(g.Params, w.Params) || (g.Params == nil) != (w.Params == nil) {
				t.Fatalf("%q: request %#v, reference %#v", data, got, want)
			}
		case *jsonrpc.Response:
			g, ok := got.(*jsonrpc.Response)
			if !ok || g.ID != w.ID || !bytes.Equal(g.Result, w.Result) || (g.Result == nil) != (w.Result == nil) {
				t.Fatalf("%q: response %#v, reference %#v", data, got, want)
			}
			var ge, we *jsonrpc.Error
			gOK, wOK := errors.As(g.Error, &ge), errors.As(w.Error, &we)
			if gOK != wOK || gOK && (ge.Code != we.Code || ge.Message != we.Message || !bytes.Equal(ge.Data, we.Data)) {
				t.Fatalf("%q: error member %v, reference %v", data, g.Error, w.Error)
			}
		}
	})
}

// BenchmarkDecode compares decode with the decoder it replaced, on a
// tools/call request and its result as the daemon sees them.
func BenchmarkDecode(b *testing.B) {
	msgs := map[string][]byte{
		"request": []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"hello from the bench"},"_meta":{"progressToken":7}}}`),
		"result":  []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"hello from the bench"}],"structuredContent":{"text":"hello from the bench"}}}`),
	}
	for name, msg := range msgs {
		for impl, fn := range map[string]func([]byte) (jsonrpc.Message, error){"decode": decode, "reference": decodeReference} {
			b.Run(name+"/"+impl, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := fn(msg); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
