package migrate

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/errs"
)

// TestWriteAtAnOldKeyWhereACopySitsRefused: in a same-table migration, an application
// write after Plan at old keys that are the new keys of another entity (where its copy
// sits) is refused (ErrInvalidInput), whatever the write (Insert, Upsert, Update,
// Delete), and the copy is left as it was: the other entity still reads at CutOver.
func TestWriteAtAnOldKeyWhereACopySitsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, true, false)
	keys, _ := f.planned(t, 6, 2)
	f.advanceTo(t, Verify)
	f.settled(t)
	k := keys[3]
	npk, nrk, _ := hashKeys(k[0], k[1])
	before, err := f.m.readCopy(f.b.Ctx, k[0], k[1])
	if err != nil || !before.found {
		t.Fatalf("no copy of (%s, %s): %v", k[0], k[1], err)
	}
	for name, write := range map[string]func() error{
		"Insert": func() error { return f.m.Insert(f.b.Ctx, &Employee{Department: npk, EmployeeID: nrk, Seq: 70}) },
		"Upsert": func() error { return f.m.Upsert(f.b.Ctx, &Employee{Department: npk, EmployeeID: nrk, Seq: 71}) },
		"Update": func() error { return f.m.Update(f.b.Ctx, &Employee{Department: npk, EmployeeID: nrk, Seq: 72}) },
		"Delete": func() error { return f.m.Delete(f.b.Ctx, npk, nrk, nil) },
	} {
		if err := write(); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("%s at the keys of a copy = %v, want ErrInvalidInput", name, err)
		}
	}
	after, err := f.m.readCopy(f.b.Ctx, k[0], k[1])
	if err != nil || !after.found || after.etag != before.etag {
		t.Fatalf("the copy of (%s, %s) was changed: found %v, %v", k[0], k[1], after.found, err)
	}
	f.advanceTo(t, CutOver)
	f.settled(t)
	if v, err := f.m.Get(f.b.Ctx, k[0], k[1]); err != nil || v.Seq != 1 {
		t.Fatalf("Get(%s, %s) at CutOver = Seq %d, %v; want 1", k[0], k[1], v.Seq, err)
	}
}
