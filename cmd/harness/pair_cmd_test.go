package main

import (
	"strings"
	"testing"

	"github.com/skip2/go-qrcode"
)

// TestPairQRCodeHasEveryModule: the half-block drawing holds the QR
// code's modules exactly, two rows a line, quiet zone included.
func TestPairQRCodeHasEveryModule(t *testing.T) {
	const url = "https://box.lan:7443/pair?code=abcdefghijklmnopqrstuvwxyz234567"
	var b strings.Builder
	if err := writeQR(&b, url); err != nil {
		t.Fatal(err)
	}
	q, err := qrcode.New(url, qrcode.Medium)
	if err != nil {
		t.Fatal(err)
	}
	want := q.Bitmap()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != (len(want)+1)/2 {
		t.Fatalf("%d lines for %d module rows", len(lines), len(want))
	}
	for i, line := range lines {
		cells := []rune(line)
		if len(cells) != len(want[0]) {
			t.Fatalf("line %d has %d cells, want %d", i, len(cells), len(want[0]))
		}
		for x, c := range cells {
			top := c == ' ' || c == '▄'
			bottom := c == ' ' || c == '▀'
			if top != want[2*i][x] || (2*i+1 < len(want) && bottom != want[2*i+1][x]) {
				t.Fatalf("module (%d, %d) drawn as %q", x, 2*i, c)
			}
		}
	}
}
