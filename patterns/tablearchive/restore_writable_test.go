package tablearchive

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
)

// lastLine is the last line of lines (which end with a newline), without it.
func lastLine(t *testing.T, lines []byte) *codec.Entity {
	t.Helper()
	body := bytes.TrimSuffix(lines, []byte("\n"))
	e, err := codec.DecodeEntity(body[bytes.LastIndexByte(body, '\n')+1:])
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// RestoreTable promises that a generation whose lines are not all entities is
// ErrArchiveCorrupt before the first write. A line that decodes, in strictly ascending
// key order, but is no entity the service can hold (a RowKey with '/', a property name
// with a space, a JSON object without keys) passes a check that only decodes; the
// restore then writes the windows before it and the rest of its own window, and fails
// with ErrInvalidInput.
func TestRestoreWritesNothingOfShardsWithALineTheServiceRefuses(t *testing.T) {
	t.Parallel()
	appended := func(forge func(last *codec.Entity) map[string]any) func(t *testing.T, lines []byte) []byte {
		return func(t *testing.T, lines []byte) []byte {
			line, err := json.Marshal(forge(lastLine(t, lines)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := codec.DecodeEntity(line); err != nil {
				t.Fatalf("the forged line does not decode (the test would prove nothing): %v", err)
			}
			return append(append(bytes.Clone(lines), line...), '\n')
		}
	}
	for _, c := range []struct {
		name  string
		shard int
		edit  func(t *testing.T, lines []byte) []byte
	}{
		{"RowKey with a slash", 1, appended(func(last *codec.Entity) map[string]any {
			return map[string]any{"PartitionKey": last.PartitionKey, "RowKey": last.RowKey + "/x", "IP": "10.0.0.1"}
		})},
		{"property name with a space", 1, appended(func(last *codec.Entity) map[string]any {
			return map[string]any{"PartitionKey": last.PartitionKey, "RowKey": last.RowKey + "x", "I P": "10.0.0.1"}
		})},
		// First in key order: the empty keys come before every other.
		{"object without keys", 0, func(t *testing.T, lines []byte) []byte {
			return append([]byte("{}\n"), lines...)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sb := setupShards(t, 140)
			cj, _ := sb.exportShards(t, sb.container, 2)
			cj.KeepTable = true
			rep := sb.combined(t, cj)
			rewriteShardRows(t, sb, rep.Manifest, c.shard, func(lines []byte) []byte { return c.edit(t, lines) })
			restoreWritesNothing(t, sb, 20)
		})
	}
}
