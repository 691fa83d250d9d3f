package wideentity

import (
	"testing"
	"unicode/utf8"
)

// A chunk key parses back to its layout and index for its own logical RowKey only.
func FuzzChunkKey(f *testing.F) {
	f.Add("000123", "000123!x", 2, 1)
	f.Add("a!b", "a", 100, 99)
	f.Add("", "!", 1, 0)
	f.Fuzz(func(t *testing.T, rk, other string, n, i int) {
		if n < 1 || n > MaxChunks || i < 0 || i >= n || !utf8.ValidString(rk) { // keys are valid UTF-8 (checked before use)
			return
		}
		key := chunkKey(rk, n, i)
		gn, gi, ok := parseChunkKey(rk, key)
		if !ok || gn != n || gi != i {
			t.Fatalf("parseChunkKey(%q, %q) = %d %d %v, want %d %d", rk, key, gn, gi, ok, n, i)
		}
		if other != rk {
			if _, _, ok := parseChunkKey(other, key); ok {
				t.Fatalf("the chunk key %q of %q parsed as a chunk of %q", key, rk, other)
			}
		}
	})
}
