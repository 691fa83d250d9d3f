package tablearchive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// atLimit builds, after the last line's keys, an entity exactly at one of the service's
// limits (over: one unit past it), its RowKey holding secret.
var atLimit = map[string]func(last *codec.Entity, secret string, over bool) map[string]any{
	// 252 custom properties (255 with PartitionKey, RowKey and Timestamp).
	"properties": func(last *codec.Entity, secret string, over bool) map[string]any {
		e := map[string]any{"PartitionKey": last.PartitionKey, "RowKey": last.RowKey + secret}
		n := codec.MaxProperties
		if over {
			n++
		}
		for i := range n {
			e[fmt.Sprintf("P%03d", i)] = "v"
		}
		return e
	},
	// A RowKey of 1 KiB of UTF-16: 512 ASCII characters.
	"key": func(last *codec.Entity, secret string, over bool) map[string]any {
		rk := last.RowKey + secret
		n := codec.MaxKeyBytes / 2
		if over {
			n++
		}
		return map[string]any{"PartitionKey": last.PartitionKey, "RowKey": rk + strings.Repeat("k", n-len(rk)), "IP": "10.0.0.1"}
	},
	// 1 MiB by the service's formula: 4 + 2 × len(keys) + Σ (8 + 2 × len(name) + 2 ×
	// len(value) + 4) over string properties of 3-character names.
	"entity size": func(last *codec.Entity, secret string, over bool) map[string]any {
		rk := last.RowKey + secret
		e := map[string]any{"PartitionKey": last.PartitionKey, "RowKey": rk}
		left := codec.MaxEntityBytes - 4 - 2*(len(last.PartitionKey)+len(rk))
		if over {
			left += 2
		}
		full := codec.MaxStringBytes / 2
		for i := 0; left > 0; i++ {
			n := min(full, (left-18)/2)
			e[fmt.Sprintf("S%02d", i)] = strings.Repeat("s", n)
			left -= 18 + 2*n
		}
		return e
	},
}

// appendLine appends the JSON line of e to lines, after checking it decodes.
func appendLine(t *testing.T, lines []byte, e map[string]any) []byte {
	t.Helper()
	line, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := codec.DecodeEntity(line); err != nil {
		t.Fatalf("the line does not decode (the test would prove nothing): %v", err)
	}
	return append(append(bytes.Clone(lines), line...), '\n')
}

// TestRestoreAcceptsALineAtEachLimitAndRefusesOnePast: the restore's check of every line
// (inKeyOrder) accepts an entity exactly at each of the service's limits (252 custom
// properties, a key of 1 KiB, an entity of 1 MiB), and the restore writes it; one just
// past the limit is ErrArchiveCorrupt before the first write, and the error withholds
// the line's keys (an archived index table's keys hold the indexed values).
func TestRestoreAcceptsALineAtEachLimitAndRefusesOnePast(t *testing.T) {
	t.Parallel()
	for name, build := range atLimit {
		for _, over := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/over=%v", name, over), func(t *testing.T) {
				t.Parallel()
				const secret = "zSECRETz"
				sb := setupShards(t, 140)
				cj, _ := sb.exportShards(t, sb.container, 2)
				cj.KeepTable = true
				rep := sb.combined(t, cj)
				var forged map[string]any
				rewriteShardRows(t, sb, rep.Manifest, 1, func(lines []byte) []byte {
					forged = build(lastLine(t, lines), secret, over)
					return appendLine(t, lines, forged)
				})
				if over {
					a := sb.archiver(t, nil)
					a.seams.restoreWindow = 20
					back := sb.newTable(t, "Back")
					_, err := a.RestoreTable(sb.ctx, RestoreTableJob{Table: sb.current.Name(), Container: sb.container, Target: back.Name()})
					if err != nil && strings.Contains(err.Error(), secret) {
						t.Errorf("the restore's error carries the line's key: %v", err)
					}
					restoreWritesNothing(t, sb, 20)
					return
				}
				a := sb.archiver(t, nil)
				back := sb.newTable(t, "Back")
				if _, err := a.RestoreTable(sb.ctx, RestoreTableJob{Table: sb.current.Name(), Container: sb.container, Target: back.Name()}); err != nil {
					t.Fatalf("restore of a generation with a line at the limit: %v", err)
				}
				got, err := back.Get(sb.ctx, forged["PartitionKey"].(string), forged["RowKey"].(string))
				if err != nil {
					t.Fatalf("the line at the limit was not restored: %v", err)
				}
				if len(got.Properties) != len(forged)-2 {
					t.Errorf("the restored entity holds %d properties, the line %d", len(got.Properties), len(forged)-2)
				}
			})
		}
	}
}

// TestRestoreErrorOfALineOutOfKeyOrderWithholdsItsKeys: a line whose keys come before
// the line above it is ErrArchiveCorrupt before the first write, and the error names
// the line by its place, never by its keys or its neighbour's.
func TestRestoreErrorOfALineOutOfKeyOrderWithholdsItsKeys(t *testing.T) {
	t.Parallel()
	const secret = "zSECRETz"
	sb := setupShards(t, 140)
	cj, _ := sb.exportShards(t, sb.container, 2)
	cj.KeepTable = true
	rep := sb.combined(t, cj)
	var above string
	rewriteShardRows(t, sb, rep.Manifest, 1, func(lines []byte) []byte {
		last := lastLine(t, lines)
		above = last.RowKey
		return appendLine(t, lines, map[string]any{"PartitionKey": last.PartitionKey, "RowKey": "!" + secret, "IP": "10.0.0.1"})
	})
	a := sb.archiver(t, nil)
	back := sb.newTable(t, "Back")
	_, err := a.RestoreTable(sb.ctx, RestoreTableJob{Table: sb.current.Name(), Container: sb.container, Target: back.Name()})
	if !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("restore = %v, want ErrArchiveCorrupt", err)
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), above) {
		t.Errorf("the restore's error carries a line's key: %v", err)
	}
	if got, cerr := back.Collect(sb.ctx, repo.Query{}); cerr == nil && len(got) != 0 {
		t.Errorf("%d entities written before the refusal", len(got))
	}
}
