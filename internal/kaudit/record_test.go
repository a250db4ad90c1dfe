package kaudit

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"
)

// Records as a 6.18 kernel (Landlock ABI 7) sent them to the read-log
// group, for a shell in the shim's domain that read a denied key, a
// denied file whose name has a space, wrote a file outside its workdir
// and created one there.
const (
	recReadKey    = `audit(1796562677.152:14): domain=18f041170 blockers=fs.read_file path="/tmp/auditexp/home/.ssh/id_ed25519" dev="vda" ino=9995958`
	recAllocated  = `audit(1796562677.152:14): domain=18f041170 status=allocated mode=enforcing pid=10468 uid=0 exe="/tmp/audit-harness" comm="audit-harness"`
	recHexPath    = `audit(1796562677.152:15): domain=18f041170 blockers=fs.read_file path=2F746D702F61756469746578702F686F6D652F2E7373682F6D79206B6579 dev="vda" ino=9998015`
	recWrite      = `audit(1796562677.152:16): domain=18f041170 blockers=fs.write_file path="/tmp/auditexp/existing" dev="vda" ino=9998014`
	recMakeReg    = `audit(1796562677.152:17): domain=18f041170 blockers=fs.make_reg path="/tmp/auditexp" dev="vda" ino=9995920`
	recDealloc    = `audit(1796562677.216:19): domain=18f041170 status=deallocated denials=5`
	recSyscall    = `audit(1796562677.152:14): arch=c000003e syscall=257 success=no exit=-13 a0=ffffff9c a1=7fff053eea6d a2=0 a3=0 items=0 ppid=10468 pid=10473 auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm="cat" exe="/usr/bin/cat" key=(null)`
	recConfigOff  = `audit(1796563518.248:132): op=set audit_enabled=0 old=1 auid=4294967295 ses=4294967295 res=1`
	domainOfTests = 0x18f041170
)

func TestRecord_AccessRecordsGiveDomainRightsAndPath(t *testing.T) {
	for _, c := range []struct {
		text, path string
		blockers   []string
	}{
		{recReadKey, "/tmp/auditexp/home/.ssh/id_ed25519", []string{"fs.read_file"}},
		{recHexPath, "/tmp/auditexp/home/.ssh/my key", []string{"fs.read_file"}},
		{recWrite, "/tmp/auditexp/existing", []string{"fs.write_file"}},
		{recMakeReg, "/tmp/auditexp", []string{"fs.make_reg"}},
		{`audit(1.5:1): domain=a blockers=fs.refer,fs.make_reg name="f" dev="vda" ino=1`, "f", []string{"fs.refer", "fs.make_reg"}},
	} {
		a, err := ParseAccess(c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		if a.Path != c.path || !slices.Equal(a.Blockers, c.blockers) {
			t.Errorf("%s: path %q blockers %q, want %q %q", c.text, a.Path, a.Blockers, c.path, c.blockers)
		}
	}
	a, _ := ParseAccess(recReadKey)
	if a.Domain != domainOfTests || !a.Time.Equal(time.Unix(1796562677, 152e6)) {
		t.Errorf("domain %x time %v", a.Domain, a.Time)
	}
}

func TestRecord_DomainRecordsGiveThePidThatRestrictedItself(t *testing.T) {
	d, err := ParseDomain(recAllocated)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allocated || d.ID != domainOfTests || d.PID != 10468 || d.Exe != "/tmp/audit-harness" {
		t.Errorf("allocated: %+v", d)
	}
	d, err = ParseDomain(recDealloc)
	if err != nil || d.Allocated || d.ID != domainOfTests {
		t.Errorf("deallocated: %+v %v", d, err)
	}
	for _, bad := range []string{"", "domain=1 status=allocated pid=1", "audit(1.0:1): domain=zz status=allocated pid=1", "audit(1.0:1): domain=1 status=allocated pid=x", "audit(1.0:1): domain=1 status=odd"} {
		if _, err := ParseDomain(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// datagram is a netlink message as the kernel's audit sends it: the
// length unpadded.
func datagram(typ uint16, text string) []byte {
	b := make([]byte, nlmsgHdrLen, nlmsgHdrLen+len(text))
	binary.NativeEndian.PutUint32(b[0:], uint32(nlmsgHdrLen+len(text)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	return append(b, text...)
}

func TestRecord_UnpaddedMessagesSplit(t *testing.T) {
	b := datagram(TypeLandlockAccess, recReadKey)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, datagram(TypeLandlockDomain, recAllocated)...)
	ms := splitMessages(b)
	if len(ms) != 2 || ms[0].typ != TypeLandlockAccess || ms[0].text != recReadKey || ms[1].typ != TypeLandlockDomain || ms[1].text != recAllocated {
		t.Fatalf("split: %+v", ms)
	}
	// A length beyond the datagram takes the rest.
	b = datagram(TypeLandlockAccess, recWrite)
	binary.NativeEndian.PutUint32(b[0:], 1<<20)
	if ms := splitMessages(b); len(ms) != 1 || ms[0].text != recWrite {
		t.Fatalf("split: %+v", ms)
	}
}

// BenchmarkTracker_PlaceAccessRecord is the daemon's cost of one
// Landlock denial: split, parse and place on its run.
func BenchmarkTracker_PlaceAccessRecord(b *testing.B) {
	tr := newTracker(time.Now)
	defer tr.add(10468, time.Unix(1796562677, 0), func(Denial) {})()
	d, _ := ParseDomain(recAllocated)
	tr.domainRecord(d)
	dg := datagram(TypeLandlockAccess, recReadKey)
	b.ReportAllocs()
	for b.Loop() {
		for _, m := range splitMessages(dg) {
			a, err := ParseAccess(m.text)
			if err != nil {
				b.Fatal(err)
			}
			tr.access(a)
		}
	}
}
