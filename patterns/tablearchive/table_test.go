package tablearchive

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// signIns fills t with sign-in attempts of one day over several partitions, with every
// EDM type the codec writes.
func signIns(t *testing.T, b *bed, tb *repo.Table[codec.Entity], n int) map[string]*codec.Entity {
	t.Helper()
	items := make([]*codec.Entity, n)
	byKey := map[string]*codec.Entity{}
	for i := range items {
		e := &codec.Entity{PartitionKey: fmt.Sprintf("user%02d", i%7), RowKey: fmt.Sprintf("%06d", i), Properties: map[string]any{
			"Succeeded": i%3 != 0, "Attempts": int32(i % 5), "Bytes": int64(i) << 33, "Score": float64(i) + 0.25,
			"At": time.Date(2024, 6, 1, 0, 0, 0, i*100, time.UTC), "Client": []byte{byte(i), 1}, "Session": codec.GUID{byte(i)},
			"IP": fmt.Sprintf("10.0.%d.%d", i/250, i%250),
		}}
		items[i] = e
		byKey[e.PartitionKey+"/"+e.RowKey] = e
	}
	if err := tb.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	return byKey
}

// A table of 300 entities read in pages of 100 (as the service's of thousands at 1,000)
// is archived and deleted; a replay finds its manifest; two restores give it back.
func TestArchiveAndRestoreTable(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	ps.Table.EmulatePaging(100, false)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	want := signIns(t, b, b.current, 300)
	job := ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true}

	rep, err := b.a.ArchiveTable(b.ctx, job)
	if err != nil || rep.Outcome != OutcomeMoved {
		t.Fatalf("archive: %+v %v", rep, err)
	}
	if m := rep.Manifest; m.Entities != 300 || m.Partitions != 7 || m.SHA256 == "" || m.Bytes == 0 {
		t.Fatalf("manifest: %+v", m)
	}
	if ok, err := b.current.Exists(b.ctx); err != nil || ok {
		t.Fatalf("the archived table still exists: %v %v", ok, err)
	}
	// Replayed job: the manifest is there, the table is gone.
	if rep2, err := b.a.ArchiveTable(b.ctx, job); err != nil || rep2.Outcome != OutcomeAlreadyArchived || rep2.Manifest != rep.Manifest {
		t.Fatalf("replayed archive: %+v %v", rep2, err)
	}

	rj := RestoreTableJob{Table: b.current.Name(), Container: container, Target: b.archive.Name()}
	for i := 0; i < 2; i++ { // a restore is idempotent: twice gives the same table
		if rep, err := b.a.RestoreTable(b.ctx, rj); err != nil || rep.Outcome != OutcomeRestored {
			t.Fatalf("restore %d: %+v %v", i, rep, err)
		}
	}
	assertTableHolds(t, b, b.archive, want)
	if rep, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: "NeverArchived", Container: container}); err != nil || rep.Outcome != OutcomeMissing {
		t.Fatalf("restore of nothing: %+v %v", rep, err)
	}
}

// Stopped after the export and after the manifest, the job reruns to the same end.
func TestArchiveTableStopAndRerun(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	signIns(t, b, b.current, 300)
	job := ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true}
	for _, step := range []string{"exported", "manifest"} {
		b.a.seams.step = func(_, s string) error {
			if s == step {
				return errCrash
			}
			return nil
		}
		if _, err := b.a.ArchiveTable(b.ctx, job); !errors.Is(err, errCrash) {
			t.Fatalf("stop after %s: %v", step, err)
		}
		if ok, err := b.current.Exists(b.ctx); err != nil || !ok {
			t.Fatalf("the table was deleted by a run stopped after %s: %v %v", step, ok, err)
		}
	}
	b.a.seams.step = nil
	rep, err := b.a.ArchiveTable(b.ctx, job)
	if err != nil || rep.Outcome != OutcomeMoved || rep.Manifest.Entities != 300 {
		t.Fatalf("rerun: %+v %v", rep, err)
	}
}

// A table written to during its export is not deleted: the recount catches it.
func TestArchiveTableRefusesAChangingTable(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	signIns(t, b, b.current, 50)
	b.a.seams.step = func(_, s string) error {
		if s == "exported" {
			return b.current.Insert(b.ctx, employee("late", "writer", 1))
		}
		return nil
	}
	if _, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true}); !errors.Is(err, ErrTableChanged) {
		t.Fatal("a table that changed during its export was archived")
	}
	if ok, _ := b.current.Exists(b.ctx); !ok {
		t.Fatal("a table that changed during its export was deleted")
	}
	if _, err := b.a.ReadManifest(b.ctx, container, b.current.Name()); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("a manifest was written for a failed export: %v", err)
	}
}
