package heterogeneous_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/patterns/heterogeneous"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
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

// Audit maps a field to the default write-tracking property.
type Audit struct {
	PK  string `table:",pk"`
	RK  string `table:",rk"`
	IDs string `table:"TpWriteIDs"`
}

// On a tracked table the write history belongs to the table: the discriminator may not
// take its name, nor a registered type's field, and reads of unknown types passed through
// as *codec.Entity (UnknownAsEntity) do not show it.
func TestTrackingPropertyBelongsToTheTable(t *testing.T) {
	t.Parallel()
	b := testbed.New(t, nil)
	tracked := testbed.NewTable[codec.Entity](b, &repo.Options{TrackWrites: true, WriteIDProperty: "Hist"})
	if _, err := heterogeneous.New(tracked, &heterogeneous.Options{Registry: codec.RegistryOptions{Property: "Hist"}}); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("discriminator named like the tracking property: %v", err)
	}
	tbl, err := heterogeneous.New(testbed.NewTable[codec.Entity](b, &repo.Options{TrackWrites: true}), &heterogeneous.Options{Registry: codec.RegistryOptions{UnknownAsEntity: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := heterogeneous.Register[Audit](tbl, "Audit"); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("Register of a type mapping the tracking property: %v", err)
	}
	// An entity of a type this table does not know, written through a tracked table.
	if err := tbl.Table().Insert(b.Ctx, &codec.Entity{PartitionKey: "p", RowKey: "x", Properties: map[string]any{"EntityType": "Other", "A": "a"}}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for v, err := range tbl.Query(b.Ctx, repo.Query{Filter: filter.PartitionKey("p")}) {
		e, ok := v.(*codec.Entity)
		if err != nil || !ok || e.Properties["A"] != "a" || e.Properties[repo.DefaultWriteIDProperty] != nil {
			t.Fatalf("Query: %#v, %v", v, err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("Query read %d entities", n)
	}
}

// On a tracked table, a type with an extra map must not capture the write history as one
// of the entity's own properties (Registry.Decode skips only the discriminator): Get's
// extra map never holds the tracking property, and the conditional Update of what Get
// returned succeeds instead of writing the history back next to the fresh one.
func TestExtraMapNeverCapturesTheWriteHistory(t *testing.T) {
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

// A discriminator property named like the table's tracking property would have each
// tracked write store the history over the type name: New refuses it, or an inserted
// entity still reads back as its type.
func TestDiscriminatorCannotBeTheTrackingProperty(t *testing.T) {
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
