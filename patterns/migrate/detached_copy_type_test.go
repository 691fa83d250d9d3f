package migrate

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Clean-up deletes an old entity only behind a detached copy that holds the Transform of
// it "as the migration would write it". A row at the new keys with the real ETag and
// the Transform's values, but one property of another type than the migration writes
// (Seq, an Int64, stored as an Int32 or as a string), is not the migration's copy:
// a query on the typed value (Seq eq 1L) misses it. Clean-up refuses it
// (ErrInvalidInput) and the old entity stays.
func TestDetachedCopyOfAnotherPropertyTypeNeverDeletesTheOldEntity(t *testing.T) {
	t.Parallel()
	for name, seq := range map[string]func(int64) any{
		"Int32":  func(v int64) any { return int32(v) },
		"String": func(v int64) any { return "1" },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, false, false)
			keys, _ := f.planned(t, 6, 2)
			f.advanceTo(t, CutOver)
			f.settled(t)
			k := keys[3]
			old, err := f.m.readSource(f.b.Ctx, k[0], k[1])
			if err != nil || !old.found {
				t.Fatalf("old entity: %v", err)
			}
			npk, nrk, _ := hashKeys(k[0], k[1])
			raw, err := repo.New[codec.Entity](f.b.Direct.Tables, f.tgt.Name(), nil)
			if err != nil {
				t.Fatal(err)
			}
			genuine, err := raw.Get(f.b.Ctx, npk, nrk)
			if err != nil {
				t.Fatal(err)
			}
			v, ok := genuine.Properties["Seq"].(int64)
			if !ok || v != 1 {
				t.Fatalf("the migration's copy holds Seq %#v, want int64 1", genuine.Properties["Seq"])
			}
			genuine.Properties["Seq"] = seq(v)
			genuine.Properties[PropDetached] = true
			if err := raw.Upsert(f.b.Ctx, &genuine, nil); err != nil {
				t.Fatal(err)
			}
			f.advanceTo(t, CleanUp)
			f.settled(t)
			if _, err := f.m.RunAll(f.b.Ctx, KindCleanUp); !isInvalid(err) {
				t.Errorf("clean-up over a detached copy with Seq of another type = %v, want ErrInvalidInput", err)
			}
			if got, err := f.src.Get(f.b.Ctx, k[0], k[1]); err != nil || got.Seq != 1 {
				t.Fatalf("the old entity = Seq %d, %v; want it kept at Seq 1", got.Seq, err)
			}
		})
	}
}

// kinds holds a property of every type a copy can hold.
type kinds struct {
	PK    string `table:",pk"`
	RK    string `table:",rk"`
	ETag  string `table:",etag"`
	Whole float64
	Frac  float64
	At    time.Time
	ID    codec.GUID
	Raw   []byte
	On    bool
	Small int32
	Big   int64
	Text  string
}

// The type check keeps clean-up finishing over the copies the migration writes: a type
// with a property of every kind (a whole double among them, which the emulator stores
// as an Int32) is migrated, cleaned up without an error, and no old entity is left.
func TestCleanUpFinishesOverCopiesOfEveryPropertyType(t *testing.T) {
	t.Parallel()
	b := testbed.New(t, nil)
	src := testbed.NewTable[kinds](b, nil)
	tgt, err := repo.New[kinds](b.Clients.Tables, b.NewTableName(), b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Spec[kinds, kinds]{Name: "every-type", Service: b.Clients.Tables, Source: src, Target: tgt,
		Keys: hashKeys, Transform: func(k kinds) (kinds, error) { return k, nil }, Control: b.NewTableName()}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	var items []*kinds
	for i := range 6 {
		items = append(items, &kinds{PK: fmt.Sprintf("p%d", i%2), RK: fmt.Sprintf("r%d", i), Whole: 5, Frac: 2.5,
			At: time.Date(2026, 11, 28, 12, 0, 0, 1234500, time.UTC), ID: codec.GUID{byte(i), 1}, Raw: []byte{byte(i), 0}, On: true,
			Small: -7, Big: 1 << 40, Text: "t"})
	}
	// Zero values of every kind too (an empty string and binary, a GUID of zeros, -0).
	items = append(items, &kinds{PK: "p0", RK: "zero", At: time.Unix(0, 0).UTC(), Raw: []byte{}}, &kinds{PK: "p1", RK: "zero", At: time.Unix(0, 0).UTC(), Whole: math.Copysign(0, -1)})
	if err := src.BulkWrite(b.Ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Plan(b.Ctx); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := m.load(b.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.waitSettled(b.Ctx, st); err != nil {
			t.Fatal(err)
		}
		if st.Stage == CleanUp {
			break
		}
		if _, err := m.Advance(b.Ctx); err != nil {
			t.Fatalf("advance from %s: %v", st.Stage, err)
		}
	}
	if _, err := m.RunAll(b.Ctx, KindCleanUp); err != nil {
		t.Fatalf("clean-up over the migration's own copies: %v", err)
	}
	if left, err := src.Collect(b.Ctx, repo.Query{}); err != nil || len(left) != 0 {
		t.Fatalf("%d old entities left after clean-up (%v)", len(left), err)
	}
	for _, it := range items {
		got, err := m.Get(b.Ctx, it.PK, it.RK)
		if err != nil || got.Whole != it.Whole || got.Big != it.Big || got.ID != it.ID {
			t.Fatalf("Get(%s, %s) after clean-up = %+v, %v", it.PK, it.RK, got, err)
		}
	}
}
