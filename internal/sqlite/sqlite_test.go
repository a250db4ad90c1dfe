package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixture was made by the sqlite3 CLI: 300 rows and one of 5000
// bytes (overflow pages) in 1 KiB pages committed to the file, then in
// WAL mode an update and an insert committed to the log, and an insert
// left uncommitted, copied while the connection held it open.
func TestScenario_ATableReadsAsOfTheLogsLastCommit(t *testing.T) {
	db, err := Open(filepath.Join("testdata", "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]any{}
	if err := db.Rows("item", func(cols []any) bool {
		rows[cols[0].(string)] = cols
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 302 {
		t.Errorf("%d rows, want 300 + big + late", len(rows))
	}
	if r := rows["item-151"]; r[1] != int64(151) || r[2] != 75.5 || r[3] != "row 151" {
		t.Errorf("item-151: %v", r)
	}
	if r := rows["item-002"]; r[3] != "changed in the wal" {
		t.Errorf("the update in the log is not seen: %v", r)
	}
	if r := rows["late"]; r == nil || r[1] != int64(1000000000000) || r[2] != 2.25 {
		t.Errorf("the insert in the log: %v", r)
	}
	if r := rows["big"]; r == nil || r[1] != int64(-7) || r[2] != nil || r[3] != strings.Repeat("0123456789", 500) {
		t.Errorf("the row with overflow pages: %.80v", r)
	}
	if _, ok := rows["uncommitted"]; ok {
		t.Error("an uncommitted row was read")
	}
	if err := db.Rows("nope", func([]any) bool { return true }); !errors.Is(err, ErrNoTable) {
		t.Errorf("a missing table: %v", err)
	}
}

// A file cut short or not SQLite at all is an error, never a panic.
func TestScenario_ATruncatedDatabaseIsAnError(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []int{0, 50, 1024, 3000, 9000} {
		p := filepath.Join(dir, "cut.db")
		if err := os.WriteFile(p, b[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := Open(p)
		if err == nil {
			err = db.Rows("item", func([]any) bool { return true })
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("cut at %d: %v, want ErrCorrupt", n, err)
		}
	}
}

func TestScenario_ColumnsAreNamedAsTheSchemaSays(t *testing.T) {
	db, err := Open(filepath.Join("testdata", "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Columns("item")
	if err != nil || strings.Join(got, ",") != "id,n,f,data" {
		t.Errorf("columns %q, %v", got, err)
	}
}
