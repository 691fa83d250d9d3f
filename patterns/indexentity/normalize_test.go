package indexentity

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/queueworker"
)

// Option 2's "No id is ever lost or duplicated" holds under Normalize: writers of case
// variants of one value ("Jones", "JONES", "jOnes", ...) all meet at one index entity, the
// first-creation race included, while others rename case only (no list change) and delete.
func TestSamePartitionNormalizeCaseVariantsRaceLoseNoID(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(&SamePartitionOptions{Normalize: strings.ToLower, Conflict: fast})
	variants := []string{"Jones", "JONES", "jones", "jOnes", "JoNeS", "joNES", "JONes", "jonEs"}
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for i, v := range variants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ix.Insert(b.Ctx, emp("Sales", fmt.Sprintf("%06d", i), v)); err != nil {
				errc <- fmt.Errorf("insert %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	for i := range 4 {
		wg.Add(2)
		go func() { // a case-only rename: the list must not change
			defer wg.Done()
			e, err := b.emps.Get(b.Ctx, "Sales", fmt.Sprintf("%06d", i))
			if err == nil {
				e.LastName = strings.ToUpper(e.LastName)
				e.ETag = ""
				err = ix.Update(b.Ctx, &e)
			}
			if err != nil {
				errc <- fmt.Errorf("rename %d: %w", i, err)
			}
		}()
		go func() {
			defer wg.Done()
			if err := ix.Delete(b.Ctx, "Sales", fmt.Sprintf("%06d", 4+i), nil); err != nil {
				errc <- fmt.Errorf("delete %d: %w", 4+i, err)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	ids, err := ix.IDs(b.Ctx, "Sales", "JONES")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"000000", "000001", "000002", "000003"}; !slices.Equal(ids, want) {
		t.Fatalf("IDs = %v, want %v", ids, want)
	}
	if pages := b.indexPages(ix, "Sales"); len(pages) != 1 {
		t.Fatalf("%d index entities, want one for \"jones\"", len(pages))
	}
	got, err := collect(ix.Find(b.Ctx, "Sales", "jOnEs", nil))
	if err != nil || len(got) != 4 {
		t.Fatalf("Lookup = %d, %v", len(got), err)
	}
}

// Options 1 and 3 under Normalize: the messages of an insert and two renames (Jones ->
// Smith -> JONES) delivered again in reverse order, twice each, plus forged messages (an Old value no store can hold, a key with a control character). The lists must
// end exact: only "jones" lists the entity.
func TestEventualRedeliveredAndForgedMessagesUnderNormalizeEndExact(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q := b.queue()
	store := b.tableStore(0)
	ix, err := NewEventual(b.emps, "LastName", lastName, store, q, &EventualOptions{Settle: 2 * time.Second, Normalize: strings.ToLower, Conflict: fast})
	if err != nil {
		t.Fatal(err)
	}
	e := emp("Sales", "000001", "Jones")
	if err := ix.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Smith", "JONES"} {
		e.LastName, e.ETag = name, ""
		if err := ix.Update(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	msgs := b.takeMessages(q)
	if len(msgs) != 3 {
		t.Fatalf("%d messages, want 3", len(msgs))
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		for range 2 {
			if _, err := queueworker.Enqueue(b.Ctx, q, ix.Kind(), "", msgs[i].Payload, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	forged := []Change{
		{PartitionKey: "Sales", RowKey: "000001", Value: "jones", Old: []string{strings.Repeat("x", 2000)}},
		{PartitionKey: "Sales\x00", RowKey: "000001", Value: "jones"},
	}
	for _, c := range forged {
		if _, err := queueworker.Enqueue(b.Ctx, q, ix.Kind(), "", c, nil); err != nil {
			t.Fatal(err)
		}
	}
	w := b.drain(q, ix.Register)
	t.Logf("stats %+v", w.Stats())
	if st := w.Stats(); st.Poisoned != int64(len(forged)) {
		t.Errorf("poisoned %d, want the %d forged messages", st.Poisoned, len(forged))
	}
	b.checkKeys(store, "jones", k("Sales", "000001"))
	for _, v := range []string{"Jones", "JONES", "smith", "Smith"} {
		b.checkKeys(store, v)
	}
	got, err := collect(ix.Find(b.Ctx, "Jones", nil))
	if err != nil || len(got) != 1 {
		t.Fatalf("Lookup = %+v, %v", got, err)
	}
}

// An index that normalizes (here: lower-cases last names) applies Normalize on every
// write and on every read, so asking with another case finds the entity.
func TestSamePartitionNormalizeAppliesOnWriteAndFind(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(&SamePartitionOptions{Normalize: strings.ToLower})
	if err := ix.Insert(b.Ctx, emp("Sales", "000001", "Jones")); err != nil {
		t.Fatal(err)
	}
	if err := ix.Insert(b.Ctx, emp("Sales", "000002", "JONES")); err != nil {
		t.Fatal(err)
	}
	for _, asked := range []string{"Jones", "jones", "jOnEs"} {
		ids, err := ix.IDs(b.Ctx, "Sales", asked)
		if err != nil || strings.Join(ids, ",") != "000001,000002" {
			t.Errorf("IDs(%q) = %v, %v", asked, ids, err)
		}
		got, err := collect(ix.Find(b.Ctx, "Sales", asked, nil))
		if err != nil || len(got) != 2 {
			t.Errorf("Lookup(%q) = %d entities, %v; the check against the value must compare normalized values", asked, len(got), err)
		}
	}
	// One index entity for the value, under its normalized form.
	pages := b.indexPages(ix, "Sales")
	if len(pages) != 1 || !strings.Contains(pages[0].RowKey, "jones") {
		t.Fatalf("index entities %v, want one for \"jones\"", pages)
	}
}

// The same for options 1 and 3: the lists are keyed by the normalized value, and a lookup
// in any case finds the entity.
func TestEventualNormalizeAppliesOnWriteAndFind(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q := b.queue()
	ix, err := NewEventual(b.emps, "LastName", lastName, b.tableStore(0), q, &EventualOptions{Settle: 2 * time.Second, Normalize: strings.ToLower})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Insert(b.Ctx, emp("Sales", "000001", "Jones")); err != nil {
		t.Fatal(err)
	}
	b.drain(q, ix.Register)
	b.checkKeys(ix.Store(), "jones", k("Sales", "000001"))
	for _, asked := range []string{"Jones", "JONES"} {
		got, err := collect(ix.Find(b.Ctx, asked, nil))
		if err != nil || len(got) != 1 || got[0].EmployeeID != "000001" {
			t.Errorf("Lookup(%q) = %+v, %v", asked, got, err)
		}
	}
}
