package terminal

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOutputLimitByteByByte(t *testing.T) {
	const s = "aé€😀bé"
	for limit := 1; limit <= len(s)+1; limit++ {
		o := output{limit: limit}
		for i := 0; i < len(s); i++ {
			o.write([]byte{s[i]})
		}
		whole := output{limit: limit}
		whole.write([]byte(s))
		assert.Equal(t, whole.String(), o.String(), "limit %d", limit)
		assert.Equal(t, limit < len(s), o.truncated, "limit %d", limit)
		got := o.String()
		assert.True(t, strings.HasSuffix(s, got), "limit %d: %q", limit, got)
		assert.LessOrEqual(t, len(got), limit)
		assert.Greater(t, len(got), limit-4, "limit %d: %q", limit, got)
		if got != "" {
			assert.True(t, strings.HasPrefix(got, "a") || strings.HasPrefix(got, "é") ||
				strings.HasPrefix(got, "€") || strings.HasPrefix(got, "😀") ||
				strings.HasPrefix(got, "b"), "limit %d starts mid-character: %q", limit, got)
		}
	}
}

func TestOutputLimitCompacts(t *testing.T) {
	o := output{limit: 10}
	for i := 0; i < 1000; i++ {
		o.write([]byte("0123456"))
	}
	assert.Equal(t, "6012345601234560123456"[12:], o.String())
	assert.LessOrEqual(t, len(o.buf), 2*10+7)
	assert.True(t, o.truncated)
}

func TestOutputNoLimit(t *testing.T) {
	o := output{}
	o.write([]byte("ab"))
	o.write([]byte("cd"))
	assert.Equal(t, "abcd", o.String())
	assert.False(t, o.truncated)
}

func TestOutputInvalidUTF8(t *testing.T) {
	o := output{limit: 4}
	o.write([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80})
	// No boundary exists; the cut moves at most UTFMax-1 bytes.
	assert.Equal(t, 1, len(o.String()))
	assert.True(t, o.truncated)
}
