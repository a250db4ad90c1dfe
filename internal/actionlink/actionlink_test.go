package actionlink

import (
	"errors"
	"regexp"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newStore() (*Store, *clock) {
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return New(c.now), c
}

var permission = Prompt{Harness: "app", RunID: 3, PromptID: 7}

// TestScenario_ALinkAnswersItsPromptOnceAndEndsItsSiblings: a person
// opens the Yes link (nothing changes), uses it (it is theirs), and then
// neither it nor the No link of the same prompt can be used again.
func TestScenario_ALinkAnswersItsPromptOnceAndEndsItsSiblings(t *testing.T) {
	s, _ := newStore()
	ids, err := s.Mint(permission, "claude-code", "Do you want to proceed?", []string{"Yes", "No"}, 0)
	if err != nil || len(ids) != 2 {
		t.Fatal(ids, err)
	}
	url := regexp.MustCompile(`^[A-Za-z0-9_-]{32}$`)
	if !url.MatchString(ids[0]) || ids[0] == ids[1] {
		t.Fatalf("ids %q are not URL-safe 192-bit ids", ids)
	}
	for range 3 {
		l, err := s.Look(ids[0])
		if err != nil || l.Choice != "Yes" || l.Number != 1 || l.Prompt != permission || l.Text != "Do you want to proceed?" {
			t.Fatalf("look: %+v %v", l, err)
		}
	}
	l, err := s.Claim(ids[0])
	if err != nil || l.Choice != "Yes" {
		t.Fatalf("claim: %+v %v", l, err)
	}
	for _, id := range ids {
		if _, err := s.Claim(id); !errors.Is(err, ErrUsed) {
			t.Errorf("claim after use: %v", err)
		}
		if l, err := s.Look(id); !errors.Is(err, ErrUsed) || l.Harness != "app" {
			t.Errorf("look after use: %+v %v", l, err)
		}
	}
	// A later message of the same prompt (a reminder) mints used links.
	more, _ := s.Mint(permission, "claude-code", "Do you want to proceed?", []string{"Yes", "No"}, 0)
	if _, err := s.Claim(more[1]); !errors.Is(err, ErrUsed) {
		t.Errorf("a new link of an answered prompt: %v", err)
	}
}

// TestScenario_ALinkIsBoundToOnePromptInstance: links of another run or
// another prompt of the same run (even a prompt that reads the same)
// are their own: using one leaves the others usable.
func TestScenario_ALinkIsBoundToOnePromptInstance(t *testing.T) {
	s, _ := newStore()
	a, _ := s.Mint(permission, "demo", "Run it?", []string{"Yes", "No"}, 0)
	later := permission
	later.PromptID++
	b, _ := s.Mint(later, "demo", "Run it?", []string{"Yes", "No"}, 0)
	other := permission
	other.RunID++
	c, _ := s.Mint(other, "demo", "Run it?", []string{"Yes", "No"}, 0)
	if _, err := s.Claim(a[0]); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{b[0], b[1], c[0], c[1]} {
		l, err := s.Look(id)
		if err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
	}
	if l, _ := s.Look(b[1]); l.Prompt != later || l.Choice != "No" {
		t.Fatalf("the later prompt's link: %+v", l)
	}
}

// TestScenario_ALinkExpires: after its ttl a link is expired, for a
// look and a claim; an unknown id is unknown; a released claim (the
// answer typed nothing) can be tried again.
func TestScenario_ALinkExpires(t *testing.T) {
	s, c := newStore()
	ids, _ := s.Mint(permission, "demo", "Run it?", []string{"Yes", "No"}, time.Minute)
	c.add(59 * time.Second)
	if _, err := s.Claim(ids[1]); err != nil {
		t.Fatal(err)
	}
	s.Release(ids[1])
	s.Release(ids[0]) // not the claimer: nothing
	if _, err := s.Look(ids[0]); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	c.add(time.Second)
	for _, id := range ids {
		if l, err := s.Claim(id); !errors.Is(err, ErrExpired) || l.Harness != "app" {
			t.Errorf("claim at expiry: %+v %v", l, err)
		}
	}
	if _, err := s.Look("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown: %v", err)
	}
	// Long after, the store forgets them (at the next mint).
	c.add(2 * time.Hour)
	s.Mint(Prompt{Harness: "b", RunID: 1, PromptID: 1}, "demo", "", []string{"Yes"}, 0)
	if _, err := s.Look(ids[0]); !errors.Is(err, ErrUnknown) || s.Len() != 1 {
		t.Errorf("an old link is kept: %v, %d links", err, s.Len())
	}
}

// TestScenario_TheStoreIsBounded: a flood of prompts keeps at most
// maxLinks, the soonest to expire going first.
func TestScenario_TheStoreIsBounded(t *testing.T) {
	s, c := newStore()
	first, _ := s.Mint(Prompt{Harness: "a", RunID: 1, PromptID: 1}, "demo", "", []string{"Yes", "No"}, 0)
	for i := range maxLinks {
		c.add(time.Millisecond)
		s.Mint(Prompt{Harness: "a", RunID: 1, PromptID: uint64(i + 2)}, "demo", "", []string{"Yes"}, 0)
	}
	if s.Len() != maxLinks {
		t.Fatalf("%d links", s.Len())
	}
	if _, err := s.Look(first[0]); !errors.Is(err, ErrUnknown) {
		t.Fatalf("the oldest link is kept: %v", err)
	}
}
