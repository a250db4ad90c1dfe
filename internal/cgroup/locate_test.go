//go:build linux

package cgroup

import (
	"strings"
	"testing"
)

// This machine's layout: v1 controllers under /sys/fs/cgroup/*, cgroup2 at
// /sys/fs/cgroup/unified.
const hybridMountinfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const hybridCgroup = `9:name=systemd:/
4:memory:/process_api/e01f3342f0d442f64b64e3a28f229179
1:cpu:/
0::/
`

func TestLocate(t *testing.T) {
	for _, tc := range []struct {
		name, cgroup, mountinfo string
		want                    Location
		err                     string
	}{
		{name: "hybrid root", cgroup: hybridCgroup, mountinfo: hybridMountinfo,
			want: Location{Mount: "/sys/fs/cgroup/unified", Path: "/"}},
		{name: "unified, systemd user service",
			cgroup:    "0::/user.slice/user-1000.slice/user@1000.service/app.slice/harness.service\n",
			mountinfo: "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
			want:      Location{Mount: "/sys/fs/cgroup", Path: "/user.slice/user-1000.slice/user@1000.service/app.slice/harness.service"}},
		{name: "mount rooted below the hierarchy root",
			cgroup:    "0::/ci/job 7\n",
			mountinfo: `50 23 0:40 /ci /mnt/cg\040x rw - cgroup2 cgroup2 rw` + "\n",
			want:      Location{Mount: "/mnt/cg x", Path: "/job 7"}},
		{name: "v1 only", cgroup: "4:memory:/\n1:cpu:/\n", mountinfo: hybridMountinfo, err: "no 0:: line"},
		{name: "no cgroup2 mount", cgroup: "0::/\n", mountinfo: "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n", err: "no cgroup v2 hierarchy mounted"},
		{name: "outside the namespace", cgroup: "0::/../../other\n", mountinfo: hybridMountinfo, err: "outside this namespace"},
		{name: "mount root elsewhere", cgroup: "0::/a/b\n",
			mountinfo: "50 23 0:40 /c /mnt/cg rw - cgroup2 cgroup2 rw\n", err: "no cgroup2 mount holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := locate([]byte(tc.cgroup), []byte(tc.mountinfo))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("locate = %+v, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("locate = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestEscapeName(t *testing.T) {
	for in, want := range map[string]string{
		"reviewer":      "reviewer",
		"mcp.gitea":     "mcp.gitea",
		"app/mcp.gitea": "app%2Fmcp.gitea",
		"app/web_1":     "app%2Fweb_1",
		".hidden":       "%2Ehidden",
	} {
		if got := escapeName(in); got != want {
			t.Errorf("escapeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSubtreeNameIsStablePerSocketAndDistinct(t *testing.T) {
	a, b := SubtreeName("/run/user/1000/harness/harness.sock"), SubtreeName("/tmp/x/harness.sock")
	if a != SubtreeName("/run/user/1000/harness/harness.sock") || a == b || !strings.HasPrefix(a, "harness-") {
		t.Fatalf("SubtreeName: %q, %q", a, b)
	}
}
