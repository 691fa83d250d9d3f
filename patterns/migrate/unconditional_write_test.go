package migrate

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/errs"
)

// TestUnconditionalWritesOnceCleanUpBeganNeverMeetPreconditionFailed: once clean-up
// began the copy is written If-Match the version read; an Update or a Delete the
// application made unconditional (no ETag), with another write landing between that read
// and the write, still applies (never errs.ErrPreconditionFailed), and is the last write,
// at CleanUp and at Done.
func TestUnconditionalWritesOnceCleanUpBeganNeverMeetPreconditionFailed(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 8, 2)
	f.advanceTo(t, CleanUp)
	f.settled(t)
	run := func(stage Stage, up, del [2]string) {
		t.Helper()
		for _, k := range [][2]string{up, del} {
			var armed atomic.Bool
			armed.Store(true)
			f.m.seams.newWrite = func(pk, rk string) {
				if pk == k[0] && rk == k[1] && armed.CompareAndSwap(true, false) {
					if err := f.m.Upsert(f.b.Ctx, &Employee{Department: pk, EmployeeID: rk, Seq: 50}); err != nil {
						t.Error(err)
					}
				}
			}
			var err error
			if k == up {
				err = f.m.Update(f.b.Ctx, &Employee{Department: k[0], EmployeeID: k[1], Seq: 60})
			} else {
				err = f.m.Delete(f.b.Ctx, k[0], k[1], nil)
			}
			if armed.Load() {
				t.Fatalf("%s: the write never reached the window", stage)
			}
			if err != nil {
				t.Errorf("%s: unconditional write with another landing first = %v, want nil", stage, err)
			}
		}
		f.m.seams.newWrite = nil
		if v, err := f.m.Get(f.b.Ctx, up[0], up[1]); err != nil || v.Seq != 60 {
			t.Errorf("%s: Get after the Update = Seq %d, %v; want 60", stage, v.Seq, err)
		}
		if _, err := f.m.Get(f.b.Ctx, del[0], del[1]); !errors.Is(err, errs.ErrNotFound) {
			t.Errorf("%s: Get after the Delete = %v, want ErrNotFound", stage, err)
		}
	}
	run(CleanUp, keys[1], keys[2])
	f.advanceTo(t, Done)
	f.settled(t)
	run(Done, keys[3], keys[4])
}
