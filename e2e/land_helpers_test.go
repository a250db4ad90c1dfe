//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// landResult is `harness land --json`.
type landResult struct {
	Harness   string   `json:"harness"`
	Branch    string   `json:"branch"`
	Base      string   `json:"base"`
	Commit    string   `json:"commit"`
	Merged    bool     `json:"merged"`
	Pushed    bool     `json:"pushed"`
	PRURL     string   `json:"pr_url"`
	Mode      string   `json:"mode"`
	Committed string   `json:"committed"`
	Removed   bool     `json:"removed"`
	Notes     []string `json:"notes"`
}

// gitEnvTOML is an env table giving a harness's own git commits an
// author.
const gitEnvTOML = `env = { GIT_AUTHOR_NAME = "agent", GIT_AUTHOR_EMAIL = "agent@e", GIT_COMMITTER_NAME = "agent", GIT_COMMITTER_EMAIL = "agent@e" }`

// newLandRepo is a repository on main with a README and a .gitignore
// (.env and setup's files ignored) committed.
func newLandRepo(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	gitRun(t, repo, "init", "-q", "-b", "main")
	landPut(t, filepath.Join(repo, "README"), "base\n")
	landPut(t, filepath.Join(repo, ".gitignore"), ".env\nsetup.*\nports.txt\n")
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "base")
	return repo
}

func landPut(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func landRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exists reports whether path is there.
func landExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// treeState is what a checkout looks like to git and on disk: HEAD,
// status and every file's bytes (the .git entry aside).
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	s := map[string]string{"HEAD": gitRun(t, dir, "rev-parse", "HEAD"), "status": gitRun(t, dir, "status", "--porcelain")}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			b, _ := os.ReadFile(p)
			s[p] = string(b)
		}
		return nil
	})
	return s
}
