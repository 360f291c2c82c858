package sandbox

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allocated returns the bytes fn allocated on the heap.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHugeSparseFileReadIsBounded: a 5 GB sparse file (no newline) in the
// root must not make the host read it into memory, whatever line and
// limit ask for.
func TestHugeSparseFileReadIsBounded(t *testing.T) {
	l := newLayout(t)
	p := filepath.Join(l.root, "huge")
	f, err := os.Create(p)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(5<<30))
	require.NoError(t, f.Close())

	const max = 8 << 20
	for _, c := range []struct{ line, limit int }{{0, 1}, {1, 0}, {0, 0}, {1, 5}} {
		var err error
		n := allocated(func() { _, err = l.r.ReadText(bg, p, c.line, c.limit, max) })
		t.Logf("line %d limit %d: %d bytes allocated, err %v", c.line, c.limit, n, err)
		assert.Error(t, err)
		assert.Less(t, n, uint64(2*max+1<<20), "line %d limit %d", c.line, c.limit)
		requireReason(t, err, ReasonTooLarge)
	}
}
