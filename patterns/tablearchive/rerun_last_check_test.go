package tablearchive

import (
	"errors"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// "Immediately before DeleteTable, query the entities with a Timestamp at or after the
// export's start (on a rerun: the start of the scan of 3) minus ClockSkew: each must be
// one the export holds, with the same ETag."
//
// The rerun path: a first delivery stops after its manifest (before its checks and the
// delete); the redelivery finds that the latest generation holds the table exactly and
// goes straight to the delete. A writer (one that should not exist) acts in the
// narrowest window it leaves: after the rerun's full scan and the read-back of the
// generation's data, just before the last check. An update of an exported entity and
// an insert must each keep the table (ErrTableChanged), with the write in it.
func TestRerunFindsAWriteJustBeforeTheDelete(t *testing.T) {
	t.Parallel()
	for _, what := range []string{"update", "insert"} {
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "")
			container := testenv.ContainerName(t)
			signIns(t, b, b.current, 50)
			job := ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true}

			first := b.another(t)
			first.seams.step = func(_, s string) error {
				if s == "manifest" {
					return errCrash
				}
				return nil
			}
			if _, err := first.ArchiveTable(b.ctx, job); !errors.Is(err, errCrash) {
				t.Fatalf("delivery 1: %v", err)
			}
			gens, err := b.a.Generations(b.ctx, container, job.Table)
			if err != nil || len(gens) != 1 {
				t.Fatalf("generations after delivery 1: %v %v", gens, err)
			}

			rerun := b.another(t)
			var once sync.Once
			wrote := false
			rerun.seams.step = func(_, s string) error {
				var err error
				if s == "before-delete" {
					once.Do(func() {
						wrote = true
						switch what {
						case "update":
							err = b.current.Upsert(b.ctx, employee("user01", "000001", 77), nil)
						default:
							err = b.current.Insert(b.ctx, employee("late", "000001", 1))
						}
					})
				}
				if s == "manifest" {
					t.Errorf("the rerun exported a new generation: it did not take the latest as holding the table")
				}
				return err
			}
			_, err = rerun.ArchiveTable(b.ctx, job)
			if !wrote {
				t.Fatalf("the rerun never reached its delete: %v", err)
			}
			if !errors.Is(err, ErrTableChanged) {
				t.Fatalf("rerun with a write just before its delete: %v, want ErrTableChanged", err)
			}
			if ok, err := b.current.Exists(b.ctx); err != nil || !ok {
				t.Fatalf("the table was deleted: %v %v", ok, err)
			}
			pk := "user01"
			if what == "insert" {
				pk = "late"
			}
			got, err := b.current.Get(b.ctx, pk, "000001")
			if err != nil {
				t.Fatalf("the acknowledged %s is gone: %v", what, err)
			}
			if what == "update" && got.Properties["Age"] != int32(77) {
				t.Fatalf("the acknowledged update is lost: %v", got.Properties)
			}
		})
	}
}
