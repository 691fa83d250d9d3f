package secondaryindex_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks "Inter.Lookup always verifies" against forged data in the index partition
// (DESIGN "Untrusted data"): a row keyed like a copy of the value for another RowKey,
// whose properties do not decode as an Employee. Verification only needs the copy's key
// (it reads the primary), so the real entity must still be found.
func TestInterLookupForgedCopyDoesNotHideEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, queue, x)
	e := iemp(51, "Real", "One", "real@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	forged := &codec.Entity{PartitionKey: "email_Sales", RowKey: interKey("real@contoso.com", "000000"),
		Properties: map[string]any{"Age": "not a number", "EmployeeId": "000000"}}
	if err := b.Raw.Upsert(b.Ctx, forged, nil); err != nil {
		t.Fatal(err)
	}
	got, err := x.Lookup(b.Ctx, "Sales", "email", "real@contoso.com")
	if err != nil || got.RowKey != e.RowKey {
		t.Fatalf("Lookup with a forged copy ahead of the real one = %+v, %v; want the real entity", got, err)
	}
}

// Attacks the "same method set ... so code written against one reads the same against the
// other" promise on the write-back of a partial copy: Intra refuses to Update a value read
// through an index whose copies carry only some properties (it would erase the others).
// The same code against Inter (an unverified Find, then Update) must not silently erase
// the primary's other properties either.
func TestInterUpdateFromPartialCopyNeverErasesProperties(t *testing.T) {
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

// The refusal of a write-back from a partial copy (TestInterUpdateFromPartialCopyNeverErasesProperties)
// happens before any request; the same value can still be deleted (unconditionally, as
// any unverified hit), and a verified read of the same index carries the primary's ETag
// and updates normally.
func TestInterPartialCopyRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, queue, x)
	for _, e := range []*Employee{iemp(61, "Pia", "Part", "pia@contoso.com"), iemp(62, "Ola", "Part", "ola@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	testbed.Drain(t, w)
	p := collect(t, x.Find(b.Ctx, "Sales", "email", "pia@contoso.com", nil))
	if len(p) != 1 {
		t.Fatalf("Find found %d", len(p))
	}
	tm, qm := b.Proxies.Table.Count(), b.Proxies.Queue.Count()
	p[0].FirstName = "Pia-Maria"
	err := x.Update(b.Ctx, &p[0])
	if !errors.Is(err, repo.ErrInvalidInput) || !strings.Contains(err.Error(), `index "email"`) {
		t.Fatalf("Update from a partial copy = %v, want ErrInvalidInput naming the index", err)
	}
	if n, m := requestsTo(b.Proxies.Table, tm), requestsTo(b.Proxies.Queue, qm); n != 0 || m != 0 {
		t.Fatalf("%d table and %d queue requests sent for a refused update", n, m)
	}
	// Verified: the primary as stored, with its ETag: the update goes through.
	v := collect(t, x.Find(b.Ctx, "Sales", "email", "pia@contoso.com", &secondaryindex.ReadOptions{Verify: true}))
	if len(v) != 1 || v[0].Age == 0 {
		t.Fatalf("verified Find = %+v", v)
	}
	v[0].FirstName = "Pia-Maria"
	if err := x.Update(b.Ctx, &v[0]); err != nil {
		t.Fatalf("Update from a verified hit: %v", err)
	}
	// Delete of an unverified partial hit: the mark is no ETag; it deletes.
	o := collect(t, x.Find(b.Ctx, "Sales", "email", "ola@contoso.com", nil))
	if len(o) != 1 {
		t.Fatalf("Find found %d", len(o))
	}
	if err := x.Delete(b.Ctx, o[0].Department, o[0].RowKey, &repo.DeleteOptions{ETag: o[0].ETag}); err != nil {
		t.Fatalf("Delete of an unverified partial hit: %v", err)
	}
	if _, err := x.Get(b.Ctx, "Sales", o[0].RowKey); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("after Delete: %v, want ErrNotFound", err)
	}
}

// Inter.Lookup refuses an index with duplicates, as Intra.Lookup does, before any
// request; SafetyDelay under settle's 2 s is refused with a message that says so.
func TestInterLookupDuplicatesAndShortSafetyDelay(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail, byLast)
	tm := b.Proxies.Table.Count()
	if _, err := x.Lookup(b.Ctx, "Sales", "last", "Lee"); !errors.Is(err, repo.ErrInvalidInput) || !strings.Contains(err.Error(), "use Find") {
		t.Fatalf("Inter.Lookup on an index with duplicates = %v, want ErrInvalidInput (use Find)", err)
	}
	if n := requestsTo(b.Proxies.Table, tm); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	for _, d := range []time.Duration{time.Millisecond, time.Second, 2*time.Second - 1, -2} {
		_, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail}, &secondaryindex.InterOptions{SafetyDelay: d})
		if !errors.Is(err, repo.ErrInvalidInput) || !strings.Contains(err.Error(), "at least 2s") {
			t.Errorf("SafetyDelay %v: %v, want ErrInvalidInput saying at least 2s", d, err)
		}
	}
	if _, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail}, &secondaryindex.InterOptions{SafetyDelay: 2 * time.Second}); err != nil {
		t.Errorf("SafetyDelay 2s: %v", err)
	}
}

// Forged rows in the index partition, of every kind verification can meet (an undecodable
// body, a key that is no primary RowKey, a copy naming an entity that does not have the
// value), sort before the real copy: a verified Find yields only the real entity and
// Lookup finds it.
func TestInterVerifiedReadsSkipForgedRows(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, queue, x)
	real := iemp(71, "Real", "One", "real@contoso.com")
	other := iemp(72, "Other", "Two", "other@contoso.com")
	for _, e := range []*Employee{real, other} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	testbed.Drain(t, w)
	for i, f := range []*codec.Entity{
		{RowKey: interKey("real@contoso.com", "000000"), Properties: map[string]any{"Age": "not a number"}},
		{RowKey: interKey("real@contoso.com", "0\x01bad"), Properties: map[string]any{"Age": "x"}},
		{RowKey: interKey("real@contoso.com", "000000a"), Properties: map[string]any{"FirstName": "Forged"}},
		{RowKey: interKey("real@contoso.com", other.RowKey[:len(other.RowKey)-1]), Properties: map[string]any{"Age": "y"}},
	} {
		f.PartitionKey = "email_Sales"
		if err := b.Raw.Upsert(b.Ctx, f, nil); err != nil {
			t.Logf("forged row %d not stored (%v): the service refuses its key", i, err)
		}
	}
	got := collect(t, x.Find(b.Ctx, "Sales", "email", "real@contoso.com", &secondaryindex.ReadOptions{Verify: true}))
	if len(got) != 1 || got[0].RowKey != real.RowKey || got[0].Age != real.Age {
		t.Fatalf("verified Find = %s, want only %s", fmt.Sprint(got), real.RowKey)
	}
	if v, err := x.Lookup(b.Ctx, "Sales", "email", "real@contoso.com"); err != nil || v.RowKey != real.RowKey {
		t.Fatalf("Lookup = %+v, %v", v, err)
	}
}

// A reader that asks to verify gets only hits the primary confirms, as the primary holds
// them; a stale hit is dropped and its repair enqueued.
func TestInterVerifiedReads(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, name := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, name, x)
	e := iemp(901, "Don", "Hall", "donh@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	// The primary changes around the index: its copy is now stale.
	e.Email = "don.hall@contoso.com"
	if err := x.Table().Update(b.Ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, x.Find(b.Ctx, "Sales", "email", "donh@contoso.com", nil)); len(got) != 1 {
		t.Fatalf("unverified: %d hits", len(got))
	}
	if got := collect(t, x.Find(b.Ctx, "Sales", "email", "donh@contoso.com", &secondaryindex.ReadOptions{Verify: true})); len(got) != 0 {
		t.Fatalf("verified read returned a stale hit: %+v", got)
	}
	testbed.Drain(t, w) // the read repair
	b.expect(t, "email_Sales", [2]string{"don.hall@contoso.com", "000901"})
	got, err := x.Lookup(b.Ctx, "Sales", "email", "don.hall@contoso.com")
	if err != nil || got.Age != e.Age || got.ETag != e.ETag {
		t.Fatalf("verified lookup: %+v %v (want ETag %s)", got, err, e.ETag)
	}
}

// Inter.Lookup has Intra.Lookup's signature and promise: the entity returned has the value
// now. Between an update and its reconciliation the old value's copy is still there (an
// unverified Find returns it); Lookup checks it against the primary and finds nothing.
func TestInterLookupNeverReturnsAStaleCopy(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, queue, x)
	e := iemp(31, "Sam", "Stale", "sam@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	e.Email = "samuel@contoso.com"
	if err := x.Update(b.Ctx, e); err != nil { // not reconciled yet: the old copy stays
		t.Fatal(err)
	}
	if n := len(collect(t, x.Find(b.Ctx, "Sales", "email", "sam@contoso.com", nil))); n != 1 {
		t.Fatalf("unverified Find found %d, want the stale copy", n)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "sam@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Lookup of the old value = %+v, %v; want ErrNotFound", got, err)
	}
}
