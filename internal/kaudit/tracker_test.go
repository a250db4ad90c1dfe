package kaudit

import (
	"sync"
	"testing"
	"time"
)

type told struct {
	mu sync.Mutex
	ds []Denial
}

func (t *told) on(d Denial) { t.mu.Lock(); t.ds = append(t.ds, d); t.mu.Unlock() }

func (t *told) paths() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ps []string
	for _, d := range t.ds {
		ps = append(ps, d.Path)
	}
	return ps
}

func mustAccess(t *testing.T, text string) Access {
	t.Helper()
	a, err := ParseAccess(text)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustDomain(t *testing.T, text string) Domain {
	t.Helper()
	d, err := ParseDomain(text)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var spawned = time.Unix(1796562677, 100e6) // just before the records

// The kernel logs a domain's allocation after its first denial, in the
// same event: the denial waits for it, then goes to the run of its pid.
func TestTracker_DenialBeforeTheDomainRecordGoesToTheRunOfItsPid(t *testing.T) {
	tr := newTracker(time.Now)
	var mine, other told
	stop := tr.add(10468, spawned, mine.on)
	defer stop()
	defer tr.add(999, spawned, other.on)()
	tr.access(mustAccess(t, recReadKey))
	if got := mine.paths(); len(got) != 0 {
		t.Fatalf("told before the domain was known: %q", got)
	}
	tr.domainRecord(mustDomain(t, recAllocated))
	tr.access(mustAccess(t, recHexPath))
	tr.access(mustAccess(t, recWrite))
	want := []string{"/tmp/auditexp/home/.ssh/id_ed25519", "/tmp/auditexp/home/.ssh/my key", "/tmp/auditexp/existing"}
	if got := mine.paths(); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("told %q, want %q", got, want)
	}
	if len(other.paths()) != 0 {
		t.Fatal("another run was told")
	}
	// After the run ends its domain's records go nowhere.
	stop()
	tr.access(mustAccess(t, recMakeReg))
	if got := mine.paths(); len(got) != 3 {
		t.Fatalf("told after the run ended: %q", got)
	}
}

// The shim can deny before the actor has registered the run's pid: the
// records wait, and the run gets them when it registers.
func TestTracker_RecordsBeforeTheRunRegistersAreKept(t *testing.T) {
	tr := newTracker(time.Now)
	tr.access(mustAccess(t, recReadKey))
	tr.domainRecord(mustDomain(t, recAllocated))
	tr.access(mustAccess(t, recWrite))
	var mine told
	defer tr.add(10468, spawned, mine.on)()
	if got := mine.paths(); len(got) != 2 {
		t.Fatalf("told %q, want the two earlier denials", got)
	}
}

// A domain allocated before the run was spawned is another process's
// that had the same pid; one nobody claims in time is dropped.
func TestTracker_OtherProgramsDomainsAreNotCounted(t *testing.T) {
	now := time.Now()
	tr := newTracker(func() time.Time { return now })
	tr.domainRecord(mustDomain(t, recAllocated))
	tr.access(mustAccess(t, recReadKey))
	var late told
	defer tr.add(10468, spawned.Add(time.Second), late.on)()
	tr.access(mustAccess(t, recWrite))
	if got := late.paths(); len(got) != 0 {
		t.Fatalf("a run spawned after the domain was told %q", got)
	}

	tr2 := newTracker(func() time.Time { return now })
	tr2.access(mustAccess(t, recReadKey))
	tr2.domainRecord(mustDomain(t, recAllocated))
	now = now.Add(unclaimedFor + time.Second)
	tr2.expire()
	var slow told
	defer tr2.add(10468, spawned, slow.on)()
	if got := slow.paths(); len(got) != 0 {
		t.Fatalf("an expired domain was told %q", got)
	}
	tr2.domainRecord(mustDomain(t, recDealloc))
	if len(tr2.domains) != 0 {
		t.Fatalf("a deallocated domain is remembered: %d", len(tr2.domains))
	}
}

// Another program's records cannot grow the tracker without bound.
func TestTracker_IsBounded(t *testing.T) {
	tr := newTracker(time.Now)
	for i := range maxDomains * 2 {
		a := mustAccess(t, recReadKey)
		a.Domain = uint64(i + 1)
		for range maxPending + 5 {
			tr.access(a)
		}
	}
	if len(tr.domains) > maxDomains {
		t.Fatalf("%d domains remembered", len(tr.domains))
	}
	for _, d := range tr.domains {
		if len(d.pending) > maxPending {
			t.Fatalf("%d denials pending", len(d.pending))
		}
	}
}
