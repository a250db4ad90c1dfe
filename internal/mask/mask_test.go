package mask

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

const (
	ghp  = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	jwtT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

func TestScenario_MaskReplacesLiteralsAndShapes(t *testing.T) {
	m := New("hunter2-very-secret", "s3cr3t!\"quoted", "short")
	cases := []struct{ in, want string }{
		{"plain text stays", "plain text stays"},
		{"pw=hunter2-very-secret;", "pw=[masked];"},
		{"twice hunter2-very-secret hunter2-very-secret", "twice [masked] [masked]"},
		{`{"a":"s3cr3t!\"quoted"}`, `{"a":"[masked]"}`}, // its JSON form too
		{"short stays short", "short stays short"},      // under MinLen
		{"key sk-ant-api03-AbCdEf0123456789xyzXYZ done", "key [masked] done"},
		{"OPENAI_API_KEY=sk-proj-abcdefghij0123456789KLMN", "OPENAI_API_KEY=[masked]"},
		{"token " + ghp, "token [masked]"},
		{"gho_0123456789abcdefghijABCDEF", "[masked]"},
		{"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "[masked]"},
		{"slack xoxb-1234567890-abcdefABCDEF ok", "slack [masked] ok"},
		{"aws AKIAIOSFODNN7EXAMPLE.", "aws [masked]."},
		{"jwt=" + jwtT + " end", "jwt=[masked] end"},
		{"Authorization: Bearer abc.def-ghi_jkl/mno=", "Authorization: Bearer [masked]"},
		{"authorization: bearer 0123456789", "authorization: bearer [masked]"},
		// Ordinary words with a shape's prefix stay.
		{"pip install sk-learn and task-sk-noise", "pip install sk-learn and task-sk-noise"},
		{"ghost_town gh_x disk-1234567890123456789012345", "ghost_town gh_x disk-1234567890123456789012345"},
		{"AKIAtoo short, the bearer of news", "AKIAtoo short, the bearer of news"},
		{"eyJ alone, eyJhbGciOiJIUzI1 no dot", "eyJ alone, eyJhbGciOiJIUzI1 no dot"},
		{"AKIAIOSFODNN7EXAMPLE2 is 17", "AKIAIOSFODNN7EXAMPLE2 is 17"},
	}
	for _, c := range cases {
		if got := m.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestScenario_MaskPrefersTheLongestSecretAtAPosition(t *testing.T) {
	m := New("abcdef", "abcdefghij")
	if got := m.String("x abcdefghij y abcdefg"); got != "x [masked] y [masked]g" {
		t.Fatalf("got %q", got)
	}
}

func TestScenario_MaskSetSwapsLiteralsAndKeepsShapes(t *testing.T) {
	m := New("first-secret")
	m.Set([]string{"second-secret"})
	if got := m.String("first-secret second-secret " + ghp); got != "first-secret [masked] [masked]" {
		t.Fatalf("got %q", got)
	}
	var nilM *Masker
	if got := nilM.String("x " + ghp); got != "x [masked]" {
		t.Fatalf("nil masker: %q", got)
	}
	if New().Len() != 0 || m.Len() != 1 {
		t.Fatalf("Len: %d %d", New().Len(), m.Len())
	}
}

func TestScenario_MaskLeavesCleanTextUnallocated(t *testing.T) {
	m := New("hunter2-very-secret")
	s := strings.Repeat("build step 42 ok: compiled package github.com/x/y in 3.2s\n", 20)
	if n := testing.AllocsPerRun(100, func() { _ = m.String(s) }); n != 0 {
		t.Fatalf("allocs on clean text: %v", n)
	}
}

func TestScenario_MaskIsSafeWhileSwapped(t *testing.T) {
	m := New("secret-zero")
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 200 {
			m.Set([]string{fmt.Sprintf("secret-%04d", i)})
		}
	}()
	go func() {
		defer wg.Done()
		for range 2000 {
			if strings.Contains(m.String("a "+ghp), "ghp_") {
				t.Error("shape leaked while swapping")
				return
			}
		}
	}()
	wg.Wait()
}

// FuzzMask: masking never panics, and the output never holds a literal.
func FuzzMask(f *testing.F) {
	f.Add("pw=hunter2-very-secret " + ghp + " " + jwtT)
	f.Add("Bearer ")
	f.Add("eyJ0123456789.")
	f.Fuzz(func(t *testing.T, s string) {
		m := New("hunter2-very-secret")
		out := m.String(s)
		if strings.Contains(out, "hunter2-very-secret") {
			t.Fatalf("literal left in %q", out)
		}
	})
}
