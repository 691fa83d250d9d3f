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
