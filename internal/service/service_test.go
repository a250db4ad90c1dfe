package service

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

func TestPathsPerManager(t *testing.T) {
	cases := []struct {
		spec Spec
		want string
	}{
		{Spec{GOOS: "linux", Home: "/home/a"}, "/home/a/.config/systemd/user/harness.service"},
		{Spec{GOOS: "linux", Home: "/home/a", ConfigHome: "/cfg"}, "/cfg/systemd/user/harness.service"},
		{Spec{GOOS: "linux", System: true, Home: "/home/a"}, "/etc/systemd/system/harness.service"},
		{Spec{GOOS: "darwin", Home: "/Users/a"}, "/Users/a/Library/LaunchAgents/dev.harness.daemon.plist"},
	}
	for _, c := range cases {
		if got := c.spec.Path(); got != c.want {
			t.Errorf("%+v: %s, want %s", c.spec, got, c.want)
		}
	}
}

func TestSystemUnitStartsAtBoot(t *testing.T) {
	b, err := Spec{GOOS: "linux", System: true, Exe: "/usr/local/bin/harness", Args: []string{"daemon"}}.Render()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "WantedBy=multi-user.target") || !strings.HasPrefix(string(b), Marker+"\n") {
		t.Fatalf("system unit:\n%s", b)
	}
}

func TestExecStartQuotesWhatSystemdWouldSplit(t *testing.T) {
	got := systemdCommand([]string{"/opt/my tools/harness", "daemon", "--config", `/c/100%$"x".toml`})
	want := `"/opt/my tools/harness" daemon --config "/c/100%%$$\"x\".toml"`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestLaunchdAgentIsAPropertyList(t *testing.T) {
	b, err := Spec{GOOS: "darwin", Home: "/Users/a", Exe: "/opt/h&m/harness", Args: []string{"daemon"}}.Render()
	if err != nil {
		t.Fatal(err)
	}
	if !Ours(b) {
		t.Fatal("the plist does not carry the marker")
	}
	var strs []string
	d := xml.NewDecoder(strings.NewReader(string(b)))
	d.Strict = true
	inString := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v\n%s", err, b)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			inString = tk.Name.Local == "string"
		case xml.CharData:
			if inString {
				strs = append(strs, string(tk))
			}
		case xml.EndElement:
			inString = false
		}
	}
	if strings.Join(strs, "|") != LaunchLabel+"|/opt/h&m/harness|daemon" {
		t.Fatalf("plist strings %q", strs)
	}
	if _, err := (Spec{GOOS: "darwin", System: true, Exe: "/x"}).Render(); err == nil {
		t.Fatal("--system on macOS was accepted")
	}
}
