package tablearchive

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Two deliveries of one archive-table job: delivery 1 has written its manifest and is
// held (here: stopped) before its Timestamp check and delete. Delivery 2 finds that the
// latest generation "holds the table" by a keys+ETags scan and deletes the table without
// any Timestamp check. A writer acting during that scan, behind the scan position (an
// update of a row on the first page, an insert sorting first), is not seen: the table is
// deleted and both writes are lost from table and archive. The README promises the window
// is "between the start of the last Timestamp check and DeleteTable".
func TestAttackArchiveTableDuplicateScanPathLosesWrites(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 1500, "a") // two pages
	job := ArchiveTableJob{Table: name, Container: container, Sealed: true}

	d1 := b.another(t)
	d1.seams.step = func(_, s string) error {
		if s == "manifest" {
			return errCrash // held/stopped after its manifest, before its checks and delete
		}
		return nil
	}
	if _, err := d1.ArchiveTable(b.ctx, job); !errors.Is(err, errCrash) {
		t.Fatalf("delivery 1: %v", err)
	}

	// Delivery 2: hold the second page of its scan.
	p := ps.Table.PauseAt("scan page 2", faultproxy.IsListEntities, 3) // 1: Exists, 2: page 1 of the scan, 3: page 2
	t.Cleanup(p.Release)
	done := make(chan error, 1)
	go func() { _, err := b.a.ArchiveTable(b.ctx, job); done <- err }()
	if err := p.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	// The writer (a writer that should not exist, which is exactly what the checks are for).
	if err := b.current.Update(b.ctx, &codec.Entity{PartitionKey: "user00", RowKey: "a00000", Properties: map[string]any{"Tag": "updated"}}, &repo.UpdateOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "aaa", RowKey: "new", Properties: map[string]any{"Tag": "new"}}); err != nil {
		t.Fatal(err)
	}
	p.Release()
	err := <-done
	if errors.Is(err, ErrTableChanged) {
		return // held
	}
	exists, _ := b.current.Exists(b.ctx)
	t.Fatalf("delivery 2: %v; table exists afterwards: %v. An update and an insert acknowledged during its scan are in neither the table nor any generation; want ErrTableChanged and nothing deleted", err, exists)
}
