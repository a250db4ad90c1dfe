package broker

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/harness-dev/harness/internal/errcode"
)

func TestRPCErrorCodes(t *testing.T) {
	bad := &RPCError{Key: "k", Tool: "t", Err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing field x"}}
	if got := errcode.Of(bad); got != errcode.InvalidArgument {
		t.Fatalf("invalid params: %s", got)
	}
	failed := &RPCError{Key: "k", Tool: "t", Err: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "boom"}}
	if got := errcode.Of(failed); got != errcode.Internal {
		t.Fatalf("internal error: %s", got)
	}
	if bad.Error() != "broker: upstream k: tools/call t: missing field x" {
		t.Fatalf("message %q", bad.Error())
	}
}
