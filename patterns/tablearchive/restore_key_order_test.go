package tablearchive

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// rewriteRows replaces the lines of the unsharded generation m with edit's, in place,
// under a manifest rebound to them (Entities, Bytes, SHA256): everything the restore
// verifies against the manifest agrees with the edited data.
func rewriteRows(t *testing.T, b *bed, container string, m Manifest, edit func(lines [][]byte) [][]byte) Manifest {
	t.Helper()
	lines := bytes.SplitAfter(gunzipBytes(t, download(t, b, container, m.DataBlob)), []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	body := bytes.Join(edit(lines), nil)
	m.Entities = int64(bytes.Count(body, []byte("\n")))
	m.Bytes = int64(len(body))
	m.SHA256 = sha256Hex(body)
	upload(t, b, container, m.DataBlob, gzipBytes(t, body))
	upload(t, b, container, ManifestBlobName(m.Table, m.Generation), jsonBytes(t, m))
	if err := b.a.verifyData(b.ctx, container, m); err != nil {
		t.Fatalf("the rewritten generation does not verify (the test would prove nothing): %v", err)
	}
	return m
}

// RestoreTable promises that it checks every line of a generation is an entity in
// strictly ascending key order before it writes any. The generation here is unsharded
// (one data blob, 300 sign-ins restored in windows of 100), edited under a manifest that
// agrees with it: each edit, had the restore written as it read, would have landed the
// windows before it.
func TestRestoreWritesNothingOfAGenerationOutOfKeyOrder(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		edit func(lines [][]byte) [][]byte
	}{
		// The last line of the first window again, another version of it, first in
		// the second window: it would replace the first copy silently.
		{"one key twice across a window boundary", func(lines [][]byte) [][]byte {
			again := bytes.Replace(lines[99], []byte(`"10.0.`), []byte(`"66.6.`), 1)
			return append(lines[:100:100], append([][]byte{again}, lines[100:]...)...)
		}},
		{"the first and last lines swapped", func(lines [][]byte) [][]byte {
			lines[0], lines[len(lines)-1] = lines[len(lines)-1], lines[0]
			return lines
		}},
		{"an empty line last", func(lines [][]byte) [][]byte { return append(lines, []byte("\n")) }},
		{"a line of an entity over the 1 MiB limit last", func(lines [][]byte) [][]byte {
			return append(lines, []byte(`{"PartitionKey":"zz","RowKey":"0","Pad":"`+strings.Repeat("a", 3<<20)+"\"}\n"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "")
			b.a.seams.restoreWindow = 100
			container := testenv.ContainerName(t)
			signIns(t, b, b.current, 300)
			rep, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true, KeepTable: true})
			if err != nil {
				t.Fatal(err)
			}
			rewriteRows(t, b, container, rep.Manifest, c.edit)
			_, err = b.a.RestoreTable(b.ctx, RestoreTableJob{Table: b.current.Name(), Container: container, Target: b.archive.Name()})
			written := 0
			if ok, _ := b.archive.Exists(b.ctx); ok {
				got, cerr := b.archive.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
				if cerr != nil {
					t.Fatal(cerr)
				}
				written = len(got)
			}
			if !errors.Is(err, ErrArchiveCorrupt) || written != 0 {
				t.Fatalf("restore: %v; %d entities written; want ErrArchiveCorrupt before the first write", err, written)
			}
		})
	}
}
