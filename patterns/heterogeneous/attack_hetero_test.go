package heterogeneous_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/heterogeneous"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Note keeps every property it does not map (an extra map), as the codec doc advises for
// entities other applications also write.
type Note struct {
	PK   string         `table:",pk"`
	RK   string         `table:",rk"`
	Text string         `table:"Text"`
	Rest map[string]any `table:",extra"`
	ETag string         `table:",etag"`
}

func trackedHetero(t *testing.T, b *testbed.Bed, ro codec.RegistryOptions) *heterogeneous.Table {
	t.Helper()
	tbl, err := heterogeneous.New(testbed.NewTable[codec.Entity](b, &repo.Options{TrackWrites: true}), &heterogeneous.Options{Registry: ro})
	if err != nil {
		t.Fatal(err)
	}
	if err := heterogeneous.Register[Note](tbl, "Note"); err != nil {
		t.Fatal(err)
	}
	if err := heterogeneous.Register[Employee](tbl, "Employee"); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// On a tracked table, Get of a type with an extra map captures the write history as one
// of the entity's own properties (Registry.Decode skips only the discriminator), and the
// conditional Update of what Get returned writes it back next to the fresh history.
// Expected: the extra map never holds the tracking property, and Update succeeds.
func TestAttackHeteroExtraCapturesWriteHistory(t *testing.T) {
	t.Parallel()
	b := testbed.New(t, nil)
	tbl := trackedHetero(t, b, codec.RegistryOptions{})
	n := &Note{PK: "p", RK: "n1", Text: "hello"}
	if err := heterogeneous.Insert(b.Ctx, tbl, n); err != nil {
		t.Fatal(err)
	}
	got, err := heterogeneous.Get[Note](b.Ctx, tbl, "p", "n1")
	if err != nil {
		t.Fatal(err)
	}
	_, leaked := got.Rest[repo.DefaultWriteIDProperty]
	got.Text = "changed"
	uerr := heterogeneous.Update(b.Ctx, tbl, &got, nil)
	again, gerr := heterogeneous.Get[Note](b.Ctx, tbl, "p", "n1")
	if leaked || uerr != nil || gerr != nil || again.Text != "changed" {
		t.Fatalf("extra map after Get: %v (tracking property leaked: %v); Update: %v; Get after: %+v, %v", got.Rest, leaked, uerr, again, gerr)
	}
}

// The discriminator property may be named like the table's tracking property: New accepts
// it, and each tracked write stores the history over the type name.
// Expected: New refuses it, or an inserted entity reads back as its type.
func TestAttackHeteroDiscriminatorIsTrackingProperty(t *testing.T) {
	t.Parallel()
	b := testbed.New(t, nil)
	tbl, err := heterogeneous.New(testbed.NewTable[codec.Entity](b, &repo.Options{TrackWrites: true}), &heterogeneous.Options{Registry: codec.RegistryOptions{Property: repo.DefaultWriteIDProperty}})
	if err != nil {
		return // refused: held
	}
	if err := heterogeneous.Register[Employee](tbl, "Employee"); err != nil {
		return
	}
	if err := heterogeneous.Insert(b.Ctx, tbl, &Employee{Department: "Sales", RowKey: "1", FirstName: "Ann"}); err != nil {
		return // refused: held
	}
	if _, err := heterogeneous.Get[Employee](b.Ctx, tbl, "Sales", "1"); err != nil {
		t.Fatalf("New accepted discriminator %q on a tracked table; Insert succeeded, Get: %v", repo.DefaultWriteIDProperty, err)
	}
}

// Forged discriminators read back from storage: another registered type, none, an
// unregistered one, a non-string one. Each must be a *TypeMismatchError (documented).
func TestAttackHeteroForgedType(t *testing.T) {
	t.Parallel()
	b := testbed.New(t, nil)
	tbl := trackedHetero(t, b, codec.RegistryOptions{})
	cases := map[string]any{"other": "Note", "unregistered": "Admin", "empty": "", "number": int32(7), "missing": nil}
	for rk, typ := range cases {
		e := &codec.Entity{PartitionKey: "p", RowKey: rk, Properties: map[string]any{"FirstName": "Eve", "Text": "x"}}
		if typ != nil {
			e.Properties["EntityType"] = typ
		}
		if err := b.Raw.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
		v, err := heterogeneous.Get[Employee](b.Ctx, tbl, "p", rk)
		var tm *heterogeneous.TypeMismatchError
		if !errors.As(err, &tm) || !errors.Is(err, heterogeneous.ErrTypeMismatch) {
			t.Errorf("%s (EntityType=%v): Get[Employee] = %+v, %v; want a *TypeMismatchError", rk, typ, v, err)
		}
	}
}
