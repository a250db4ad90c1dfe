package dashtoken

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/errcode"
)

func TestScenario_MintedTokensVerifyUntilRevokedAndOnlyTheirHashIsKept(t *testing.T) {
	dir := t.TempDir()
	v := NewVerifier(dir)
	if _, ok := v.Check("hdt_nothing"); ok {
		t.Fatal("a token verified before any was minted")
	}
	ro, roMeta, err := Mint(dir, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rw, rwMeta, err := Mint(dir, []string{"read", "write", "input"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ro, Prefix) || ro == rw || roMeta.ID == rwMeta.ID {
		t.Fatalf("tokens %q %q ids %s %s", ro, rw, roMeta.ID, rwMeta.ID)
	}
	if got, ok := v.Check(ro); !ok || got.ID != roMeta.ID || strings.Join(got.Grant, ",") != "read" {
		t.Fatalf("Check(read-only) = %+v %v", got, ok)
	}
	if got, ok := v.Check(rw); !ok || strings.Join(got.Grant, ",") != "read,write,input" {
		t.Fatalf("Check(read-write) = %+v %v", got, ok)
	}
	data, err := os.ReadFile(Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), ro) || strings.Contains(string(data), rw) {
		t.Fatal("the store holds a token, not only its hash")
	}
	if info, _ := os.Stat(Path(dir)); info.Mode().Perm() != 0o600 {
		t.Fatalf("store mode %v", info.Mode().Perm())
	}
	if _, err := Revoke(dir, "nope"); errcode.Of(err) != errcode.InvalidArgument {
		t.Fatalf("revoking an unknown id: %v", err)
	}
	if n, err := Revoke(dir, roMeta.ID); err != nil || n != 1 {
		t.Fatalf("Revoke = %d, %v", n, err)
	}
	if _, ok := v.Check(ro); ok {
		t.Fatal("a revoked token still verifies")
	}
	if _, ok := v.Live(rwMeta.ID); !ok {
		t.Fatal("revoking one token ended another")
	}
	if n, err := Revoke(dir, "all"); err != nil || n != 1 {
		t.Fatalf("Revoke(all) = %d, %v", n, err)
	}
	if ts, _ := List(dir); len(ts) != 0 {
		t.Fatalf("left after revoking all: %+v", ts)
	}
	if _, _, err := Mint(dir, []string{"admin"}, time.Now()); errcode.Of(err) != errcode.InvalidArgument {
		t.Fatalf("minting with a bad class: %v", err)
	}
}
