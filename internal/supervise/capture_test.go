package supervise

import (
	"bytes"
	"fmt"
	"testing"
)

// A job's output is captured for its result as the PTY hands it over, a
// few KiB at a time. Past the tail's bound each write must cost about
// what its bytes cost, not a move of the whole tail: an agent job that
// prints 100 MB (stream-json carries every tool result) moved 4 MiB per
// 4 KiB read, about a thousand times its output. The capture keeps the
// head and the last captureTail bytes whole.
func TestScenario_AJobsBigOutputIsCapturedAtTheCostOfItsBytes(t *testing.T) {
	chunk := bytes.Repeat([]byte("x"), 4095)
	const total = 16 << 20
	var lines [][]byte
	for i := 0; i < total/len(chunk)+2; i++ {
		lines = append(lines, []byte(fmt.Sprintf("\n{\"n\":%07d}\n", i)))
	}
	line := func(i int) []byte { return lines[i] }

	var c capture
	var plain bytes.Buffer
	for i, n := 0, 0; n < total; i++ {
		c.Write(chunk)
		c.Write(line(i))
		plain.Write(chunk)
		plain.Write(line(i))
		n += len(chunk) + len(line(i))
	}
	if c.moved > total {
		t.Errorf("capturing %d MiB moved %d MiB to drop the oldest bytes", total>>20, c.moved>>20)
	}
	got := c.bytes()
	want := plain.Bytes()
	if !bytes.HasPrefix(got, want[:captureHead]) || !bytes.HasSuffix(got, want[len(want)-captureTail:]) {
		t.Fatal("the capture does not keep the head and the tail")
	}
	if len(got) > captureHead+captureTail+1 {
		t.Errorf("the capture holds %d bytes, over head+tail %d", len(got), captureHead+captureTail)
	}
}
