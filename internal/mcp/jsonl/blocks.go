package jsonl

// Blocks holds a long message as it is read, in blocks of a fixed size:
// growing one slice to a message's size copies it over and over and
// leaves each old copy to the collector, so the heap (and the daemon's
// RSS) would peak at about twice the message; blocks are never copied
// until the message is known to be kept, and are dropped whole when it is
// refused.
type Blocks struct {
	bs [][]byte
	n  int
}

// blockSize is the size of one block.
const blockSize = 1 << 20

// Len is how many bytes are held.
func (b *Blocks) Len() int { return b.n }

// Write appends p (copied); it never fails.
func (b *Blocks) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(b.bs) == 0 || len(b.bs[len(b.bs)-1]) == cap(b.bs[len(b.bs)-1]) {
			// Small first, so short messages cost little.
			b.bs = append(b.bs, make([]byte, 0, min(blockSize, max(4<<10, b.n))))
		}
		last := &b.bs[len(b.bs)-1]
		k := min(cap(*last)-len(*last), len(p))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
	b.n += n
	return n, nil
}

// AppendTo appends what is held to dst, growing it at most once (to
// twice its capacity when that is more, so many appends stay linear), and
// empties b.
func (b *Blocks) AppendTo(dst []byte) []byte {
	if b.n == 0 {
		return dst
	}
	if cap(dst)-len(dst) < b.n {
		grown := make([]byte, len(dst), max(len(dst)+b.n, 2*cap(dst)))
		copy(grown, dst)
		dst = grown
	}
	for _, blk := range b.bs {
		dst = append(dst, blk...)
	}
	b.Reset()
	return dst
}

// Each calls f with the held bytes, block by block.
func (b *Blocks) Each(f func([]byte)) {
	for _, blk := range b.bs {
		f(blk)
	}
}

// Take returns the held blocks and empties b.
func (b *Blocks) Take() [][]byte {
	bs := b.bs
	b.Reset()
	return bs
}

// Reset drops what is held.
func (b *Blocks) Reset() { b.bs, b.n = nil, 0 }
