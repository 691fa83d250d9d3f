package migrate

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestCleanUpEndsWhenAnAbandonedWriteLandsBetweenDetachAndDelete: an Update without an
// ETag made at CutOver (sent If-Match the old entity read) is abandoned, its request
// held, and the application writes the entity no more until clean-up began. Clean-up
// then finishes the entity: the copy is detached at the old version it records, and
// just before the old entity is deleted If-Match that version, the service applies the
// abandoned request. The application's write goes on to succeed, the reader reads it,
// and clean-up ends with the old layout empty: the late request neither wedges the
// entity (ErrInvalidInput for every later write) nor the migration.
func TestCleanUpEndsWhenAnAbandonedWriteLandsBetweenDetachAndDelete(t *testing.T) {
	t.Parallel()
	f := setup(t, false, true)
	keys, _ := f.planned(t, 6, 1)
	f.advanceTo(t, CutOver)
	f.settled(t)
	ctx, k, p := f.b.Ctx, keys[2], f.b.Proxy()
	v := func(seq int64) *Employee {
		return &Employee{Department: k[0], EmployeeID: k[1], Name: "n" + k[1], Seq: seq}
	}
	l := holdFirst(t, p, entityWrite(f.src.Name(), k[1]))
	l.abandon(t, ctx, func(ctx context.Context) error { return f.m.Update(ctx, v(5)) })
	f.advanceTo(t, CleanUp)
	f.settled(t)
	del := p.PauseAt("clean-up delete", func(r *http.Request) bool {
		return r.Method == http.MethodDelete && onTable(f.src.Name())(r) && strings.Contains(r.URL.Path, k[1])
	}, 1)
	t.Cleanup(del.Release)
	wrote := make(chan error, 1)
	go func() { wrote <- f.m.Upsert(ctx, v(6)) }()
	if err := del.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	l.letGo()
	for {
		got, err := f.src.Get(ctx, k[0], k[1])
		if err != nil {
			t.Fatal(err)
		}
		if got.Seq == 5 {
			break // the abandoned request landed
		}
	}
	del.Release()
	if err := <-wrote; err != nil {
		t.Fatalf("write of Seq 6 at CleanUp = %v", err)
	}
	if got, err := f.m.Get(ctx, k[0], k[1]); err != nil || got.Seq != 6 {
		t.Errorf("Get after the write = Seq %d, %v; want 6", got.Seq, err)
	}
	f.advanceTo(t, Done)
	if old, _ := f.rows(t, f.src.Name()); len(old) != 0 {
		t.Errorf("at Done the old layout holds %d entities, want none", len(old))
	}
}
