package testenv

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// MaxNameLen is the longest name TableName, QueueName and ContainerName return. The service
// allows 63; the rest is left for suffixes that code under test appends (`-poison`, a date).
const MaxNameLen = 40

// nameCounter makes names unique within the process; the random part makes them unique
// across processes (parallel test binaries, reruns against a shared account).
var nameCounter atomic.Uint64

// uniqueSuffix returns 13 lowercase alphanumerics: a 5-digit base-36 counter and 8 random
// hex digits. Its fixed width keeps "name+suffix" unambiguous, so two different counters
// can never give the same name.
func uniqueSuffix() string {
	n := nameCounter.Add(1) % (36 * 36 * 36 * 36 * 36)
	c := strconv.FormatUint(n, 36)
	return strings.Repeat("0", 5-len(c)) + c + fmt.Sprintf("%08x", rand.Uint32())
}

// TableName returns a table name unique to this call, derived from the test name: it matches
// ^[A-Za-z][A-Za-z0-9]{2,62}$ and is at most MaxNameLen characters long.
func TableName(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	b.WriteByte('t')
	suffix := uniqueSuffix()
	room := MaxNameLen - 1 - len(suffix)
	for _, r := range t.Name() {
		if b.Len()-1 >= room {
			break
		}
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	b.WriteString(suffix)
	return b.String()
}

// QueueName returns a queue name unique to this call, derived from the test name: 3 to
// MaxNameLen lowercase letters, digits and single dashes, starting and ending with a letter
// or digit.
func QueueName(t testing.TB) string {
	t.Helper()
	return dashedName(t.Name())
}

// ContainerName returns a blob container name unique to this call, under the same rules as
// QueueName (which are the container rules too).
func ContainerName(t testing.TB) string {
	t.Helper()
	return dashedName(t.Name())
}

// dashedName lowercases name, turns every run of other characters into one dash, and
// appends "-" and the unique suffix.
func dashedName(name string) string {
	suffix := uniqueSuffix()
	room := MaxNameLen - 1 - len(suffix)
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if b.Len() >= room {
			break
		}
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	base := strings.TrimRight(b.String(), "-")
	if len(base) > room {
		base = strings.TrimRight(base[:room], "-")
	}
	if base == "" {
		base = "x"
	}
	return base + "-" + suffix
}
