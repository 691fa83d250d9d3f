package secondaryindex_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks "the error names the entity's PartitionKey and primary copy and says that its
// ETag changed" (TestIntraStaleETagErrorNamesTheEntity covers the moved copy and the
// primary, both refused by Intra's own read) on the path where the service refuses: the
// value was read through a copy that still exists under the same key, and another writer
// changed the entity (not that copy's key) since. The guarded action is the copy's, so the
// 412 comes from the service, for the copy's RowKey.
func TestAttackIntraStaleETagViaUnmovedCopyNamesTheEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail, byLast)
	if err := x.Insert(b.Ctx, emp(7, "Ken", "Kwok", "kenk@contoso.com")); err != nil {
		t.Fatal(err)
	}
	viaLast := collect(t, x.Find(b.Ctx, "Sales", "last", "Kwok", nil))
	if len(viaLast) != 1 {
		t.Fatalf("Find found %d", len(viaLast))
	}
	other, err := x.Get(b.Ctx, "Sales", "000007")
	if err != nil {
		t.Fatal(err)
	}
	other.Age = 61 // every copy is rewritten; no key moves
	if err := x.Update(b.Ctx, &other); err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func(v *Employee) error{
		"update": func(v *Employee) error { v.Age = 50; return x.Update(b.Ctx, v) },
		"delete": func(v *Employee) error { return x.Delete(b.Ctx, v) },
	} {
		v := viaLast[0]
		err := write(&v)
		if !errors.Is(err, repo.ErrPreconditionFailed) {
			t.Fatalf("%s: %v, want ErrPreconditionFailed", name, err)
		}
		msg := err.Error()
		for _, want := range []string{`PartitionKey="Sales"`, `RowKey="empid_000007"`, "ETag changed"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q lacks %q", name, msg, want)
			}
		}
	}
}

// Attacks the "same method set ... so code written against one reads the same against the
// other" promise on the write-back of a partial copy: Intra refuses to Update a value read
// through an index whose copies carry only some properties (it would erase the others).
// The same code against Inter (an unverified Find, then Update) must not silently erase
// the primary's other properties either.
func TestAttackInterUpdateFromPartialCopyErasesProperties(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	// Intra refuses.
	xa := b.intra(t, byEmail)
	if err := xa.Insert(b.Ctx, emp(8, "Pia", "Part", "pia@contoso.com")); err != nil {
		t.Fatal(err)
	}
	pa := collect(t, xa.Find(b.Ctx, "Sales", "email", "pia@contoso.com", nil))
	pa[0].FirstName = "Pia-Maria"
	if err := xa.Update(b.Ctx, &pa[0]); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("Intra update from a partial copy: %v, want ErrInvalidInput", err)
	}
	// Inter, same calls.
	q, queue := b.Queue()
	name := b.NewTableName()
	x, err := secondaryindex.NewInter(b.Clients.Tables, name, q, []secondaryindex.Index[Employee]{byEmail}, &secondaryindex.InterOptions{
		SafetyDelay: -1, Conflict: testbed.FastRetry(), Table: repo.Options{Retry: testbed.FastRetry()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.CreateIfNotExists(b.Ctx); err != nil {
		t.Fatal(err)
	}
	w := b.worker(t, queue, x)
	e := iemp(8, "Pia", "Part", "pia@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	p := collect(t, x.Find(b.Ctx, "Sales", "email", "pia@contoso.com", nil))
	if len(p) != 1 {
		t.Fatalf("Find found %d", len(p))
	}
	p[0].FirstName = "Pia-Maria"
	uerr := x.Update(b.Ctx, &p[0])
	got, err := x.Get(b.Ctx, "Sales", e.RowKey)
	if err != nil {
		t.Fatal(err)
	}
	if uerr == nil && got.Age != e.Age {
		t.Fatalf("Inter.Update from a partial copy succeeded and erased Age (%d -> %d); Intra refuses the same call", e.Age, got.Age)
	}
}
