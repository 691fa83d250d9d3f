package migrate

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// TestAbandonedWriteLandingBetweenDetachAndDeleteIsKeptAndReported: an Update without an
// ETag made at CutOver (sent If-Match the old entity read) is abandoned, its request
// held, and the application writes the entity no more until clean-up began. Clean-up
// detaches the copy at the old version it records, and just before the old entity is
// deleted If-Match that version, the service applies the abandoned request. At the
// service that is a write of the old layout after the detach, as a process past every
// stage bound would make (TestOldWriteBetweenCleanUpDetachAndItsTransactionIsNeverDeleted),
// one its writer may have seen acknowledged: the old entity is kept, never deleted, and
// the entity's write at CleanUp is refused (ErrInvalidInput, nothing written), so that an
// operator decides, while the reader keeps reading the copy's version.
func TestAbandonedWriteLandingBetweenDetachAndDeleteIsKeptAndReported(t *testing.T) {
	t.Parallel()
	f := setup(t, false, true)
	keys, _ := f.planned(t, 6, 1)
	f.advanceTo(t, CutOver)
	f.settled(t)
	ctx, k, p := f.b.Ctx, keys[2], f.b.Proxy()
	before, err := f.m.Get(ctx, k[0], k[1])
	if err != nil {
		t.Fatal(err)
	}
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
	if err := <-wrote; !errors.Is(err, errs.ErrInvalidInput) {
		t.Fatalf("write of Seq 6 at CleanUp over an old entity written after the detach = %v, want ErrInvalidInput", err)
	}
	if got, err := f.src.Get(ctx, k[0], k[1]); err != nil || got.Seq != 5 {
		t.Errorf("the old entity written after the detach = Seq %d, %v; want it kept at Seq 5", got.Seq, err)
	}
	if got, err := f.m.Get(ctx, k[0], k[1]); err != nil || got.Seq != before.Seq {
		t.Errorf("Get = Seq %d, %v; want the copy's Seq %d", got.Seq, err, before.Seq)
	}
}
