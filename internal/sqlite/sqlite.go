// Package sqlite reads the rows of a table from an SQLite database file
// and its write-ahead log, read-only and without taking SQLite's locks:
// enough for harness to read an agent's own session store (opencode keeps
// its sessions in SQLite) without a driver, a C library or a write to the
// agent's files. It knows the file format (sqlite.org/fileformat.html):
// table b-trees, records, overflow pages and WAL frames; it has no SQL,
// no indexes and no WITHOUT ROWID tables.
//
// A database another process writes meanwhile may be read torn: a reader
// sees an error (ErrCorrupt) or a table as of some recent commit, never a
// panic.
package sqlite

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
)

// ErrCorrupt is wrapped by every error about what the files hold.
var ErrCorrupt = errors.New("sqlite: not a database it can read")

// DB is a snapshot of a database: its pages as of the last commit in its
// WAL when it was opened.
type DB struct {
	main     []byte
	pageSize int
	usable   int
	wal      map[uint32][]byte // page number -> newest committed frame
	pages    uint32
}

// maxFile bounds what Open reads of each file.
const maxFile = 256 << 20

// Open reads path and path-wal (when present) into a snapshot.
func Open(path string) (*DB, error) {
	main, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	if len(main) < 100 || !bytes.HasPrefix(main, []byte("SQLite format 3\x00")) {
		return nil, fmt.Errorf("%s: %w: no SQLite header", path, ErrCorrupt)
	}
	ps := int(binary.BigEndian.Uint16(main[16:]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps&(ps-1) != 0 {
		return nil, fmt.Errorf("%s: %w: page size %d", path, ErrCorrupt, ps)
	}
	db := &DB{main: main, pageSize: ps, usable: ps - int(main[20]), pages: uint32(len(main) / ps)}
	if wal, err := readBounded(path + "-wal"); err == nil {
		db.applyWAL(wal)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return db, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxFile {
		return nil, fmt.Errorf("%s: %w: not a regular file under %d bytes", path, ErrCorrupt, maxFile)
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if err != nil && n < len(b) {
		return b[:n], nil // it shrank meanwhile: read what there is
	}
	return b, nil
}

// applyWAL takes the frames of the WAL's current generation (its salts)
// up to its last commit frame: the pages a reader would see.
func (db *DB) applyWAL(wal []byte) {
	if len(wal) < 32 {
		return
	}
	if m := binary.BigEndian.Uint32(wal); m != 0x377f0682 && m != 0x377f0683 {
		return
	}
	if int(binary.BigEndian.Uint32(wal[8:])) != db.pageSize {
		return
	}
	salt1, salt2 := binary.BigEndian.Uint32(wal[16:]), binary.BigEndian.Uint32(wal[20:])
	pending := map[uint32][]byte{}
	db.wal = map[uint32][]byte{}
	for off := 32; off+24+db.pageSize <= len(wal); off += 24 + db.pageSize {
		h := wal[off : off+24]
		if binary.BigEndian.Uint32(h[8:]) != salt1 || binary.BigEndian.Uint32(h[12:]) != salt2 {
			break // a frame of an earlier generation: the log ends here
		}
		pending[binary.BigEndian.Uint32(h)] = wal[off+24 : off+24+db.pageSize]
		if size := binary.BigEndian.Uint32(h[4:]); size != 0 { // a commit
			for p, b := range pending {
				db.wal[p] = b
			}
			clear(pending)
			db.pages = size
		}
	}
}

// page returns page n (1-based).
func (db *DB) page(n uint32) ([]byte, error) {
	if b, ok := db.wal[n]; ok {
		return b, nil
	}
	if n == 0 || n > db.pages || int(n)*db.pageSize > len(db.main) {
		return nil, fmt.Errorf("%w: page %d out of range", ErrCorrupt, n)
	}
	return db.main[int(n-1)*db.pageSize : int(n)*db.pageSize], nil
}

// Rows calls fn with the columns of each row of table, in rowid order,
// until fn returns false. A column is nil, int64, float64, string or
// []byte. ErrNoTable when the schema has no such table.
func (db *DB) Rows(table string, fn func(cols []any) bool) error {
	root := uint32(0)
	err := db.walk(1, 0, func(cols []any) bool {
		// sqlite_schema: type, name, tbl_name, rootpage, sql.
		if len(cols) >= 4 && cols[0] == "table" && cols[1] == table {
			if r, ok := cols[3].(int64); ok {
				root = uint32(r)
			}
			return false
		}
		return true
	})
	if err != nil && err != errStop {
		return err
	}
	if root == 0 {
		return fmt.Errorf("%w %q", ErrNoTable, table)
	}
	if err := db.walk(root, 0, fn); err != nil && err != errStop {
		return err
	}
	return nil
}

// errStop ends a walk whose fn returned false.
var errStop = errors.New("stop")

// ErrNoTable is wrapped by Rows for a table the schema does not have.
var ErrNoTable = errors.New("sqlite: no table")

// walk visits the table b-tree rooted at page n; depth bounds a cycle in
// a torn file.
func (db *DB) walk(n uint32, depth int, fn func([]any) bool) error {
	if depth > 32 {
		return fmt.Errorf("%w: b-tree deeper than 32", ErrCorrupt)
	}
	p, err := db.page(n)
	if err != nil {
		return err
	}
	h := 0
	if n == 1 {
		h = 100 // the database header
	}
	if len(p) < h+12 {
		return fmt.Errorf("%w: short page %d", ErrCorrupt, n)
	}
	kind, cells := p[h], int(binary.BigEndian.Uint16(p[h+3:]))
	var ptrs int
	switch kind {
	case 0x05: // interior table page
		ptrs = h + 12
	case 0x0d: // leaf table page
		ptrs = h + 8
	default:
		return fmt.Errorf("%w: page %d is of kind %#x, not a table's", ErrCorrupt, n, kind)
	}
	if ptrs+2*cells > len(p) {
		return fmt.Errorf("%w: page %d has too many cells", ErrCorrupt, n)
	}
	for i := range cells {
		off := int(binary.BigEndian.Uint16(p[ptrs+2*i:]))
		if off+4 > len(p) {
			return fmt.Errorf("%w: cell past page %d", ErrCorrupt, n)
		}
		if kind == 0x05 {
			if err := db.walk(binary.BigEndian.Uint32(p[off:]), depth+1, fn); err != nil { // errStop too
				return err
			}
			continue
		}
		payload, err := db.cellPayload(p, off)
		if err != nil {
			return err
		}
		cols, err := record(payload)
		if err != nil {
			return err
		}
		if !fn(cols) {
			return errStop
		}
	}
	if kind == 0x05 {
		return db.walk(binary.BigEndian.Uint32(p[h+8:]), depth+1, fn)
	}
	return nil
}

// cellPayload reads a leaf cell's record, following its overflow pages.
func (db *DB) cellPayload(p []byte, off int) ([]byte, error) {
	size, n := varint(p[off:])
	if n == 0 || size > maxFile {
		return nil, fmt.Errorf("%w: bad cell", ErrCorrupt)
	}
	off += n
	if _, n = varint(p[off:]); n == 0 { // the rowid
		return nil, fmt.Errorf("%w: bad cell", ErrCorrupt)
	}
	off += n
	total, u := int(size), db.usable
	x := u - 35
	local := total
	if total > x {
		m := (u-12)*32/255 - 23
		local = m + (total-m)%(u-4)
		if local > x {
			local = m
		}
	}
	if off+local > len(p) {
		return nil, fmt.Errorf("%w: cell past its page", ErrCorrupt)
	}
	out := append([]byte(nil), p[off:off+local]...)
	if local == total {
		return out, nil
	}
	if off+local+4 > len(p) {
		return nil, fmt.Errorf("%w: cell past its page", ErrCorrupt)
	}
	next := binary.BigEndian.Uint32(p[off+local:])
	for hops := 0; len(out) < total; hops++ {
		if next == 0 || hops > int(db.pages) {
			return nil, fmt.Errorf("%w: overflow chain ends early", ErrCorrupt)
		}
		op, err := db.page(next)
		if err != nil {
			return nil, err
		}
		take := min(total-len(out), u-4)
		out = append(out, op[4:4+take]...)
		next = binary.BigEndian.Uint32(op)
	}
	return out, nil
}

// record decodes a record's columns.
func record(b []byte) ([]any, error) {
	hsize, n := varint(b)
	if n == 0 || hsize > uint64(len(b)) {
		return nil, fmt.Errorf("%w: bad record header", ErrCorrupt)
	}
	var types []uint64
	for i := n; i < int(hsize); {
		t, m := varint(b[i:int(hsize)])
		if m == 0 {
			return nil, fmt.Errorf("%w: bad record header", ErrCorrupt)
		}
		types = append(types, t)
		i += m
	}
	body := b[hsize:]
	cols := make([]any, 0, len(types))
	for _, t := range types {
		var size int
		switch {
		case t == 0 || t == 8 || t == 9:
		case t <= 4:
			size = int(t)
		case t == 5:
			size = 6
		case t == 6 || t == 7:
			size = 8
		case t >= 12:
			size = int(t-12) / 2
		default:
			return nil, fmt.Errorf("%w: serial type %d", ErrCorrupt, t)
		}
		if size > len(body) {
			return nil, fmt.Errorf("%w: record shorter than its header says", ErrCorrupt)
		}
		v := body[:size]
		body = body[size:]
		switch {
		case t == 0:
			cols = append(cols, nil)
		case t == 8:
			cols = append(cols, int64(0))
		case t == 9:
			cols = append(cols, int64(1))
		case t == 7:
			cols = append(cols, math.Float64frombits(binary.BigEndian.Uint64(v)))
		case t <= 6:
			var x int64
			if v[0]&0x80 != 0 {
				x = -1
			}
			for _, c := range v {
				x = x<<8 | int64(c)
			}
			cols = append(cols, x)
		case t%2 == 0:
			cols = append(cols, append([]byte(nil), v...))
		default:
			cols = append(cols, string(v))
		}
	}
	return cols, nil
}

// varint reads SQLite's big-endian varint (1 to 9 bytes); n is 0 when b
// ends first.
func varint(b []byte) (v uint64, n int) {
	for i := 0; i < 9; i++ {
		if i >= len(b) {
			return 0, 0
		}
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return v, 9
}

// Columns returns the names of table's columns, in the order Rows gives
// them, read from its CREATE TABLE statement (columns added later by
// ALTER TABLE come last there too).
func (db *DB) Columns(table string) ([]string, error) {
	var sql string
	err := db.walk(1, 0, func(cols []any) bool {
		if len(cols) >= 5 && cols[0] == "table" && cols[1] == table {
			sql, _ = cols[4].(string)
			return false
		}
		return true
	})
	if err != nil && err != errStop {
		return nil, err
	}
	open, end := strings.IndexByte(sql, '('), strings.LastIndexByte(sql, ')')
	if open < 0 || end < open {
		return nil, fmt.Errorf("%w %q", ErrNoTable, table)
	}
	var names []string
	depth, start := 0, open+1
	body := sql[:end]
	for i := open + 1; i <= len(body); i++ {
		if i < len(body) {
			switch body[i] {
			case '(':
				depth++
				continue
			case ')':
				depth--
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		def := strings.Fields(body[start:i])
		start = i + 1
		if len(def) == 0 {
			continue
		}
		switch strings.ToUpper(def[0]) {
		case "CONSTRAINT", "PRIMARY", "FOREIGN", "UNIQUE", "CHECK":
			continue
		}
		names = append(names, strings.Trim(def[0], "`\"[]'"))
	}
	return names, nil
}
