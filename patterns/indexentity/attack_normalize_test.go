package indexentity

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/queueworker"
)

// Attacks option 2's "No id is ever lost or duplicated" under Normalize: writers of case
// variants of one value ("Jones", "JONES", "jOnes", ...) all meet at one index entity, the
// first-creation race included, while others rename case only (no list change) and delete.
func TestAttackSamePartitionNormalizeCaseVariantsRace(t *testing.T) {
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
	got, err := ix.Lookup(b.Ctx, "Sales", "jOnEs")
	if err != nil || len(got) != 4 {
		t.Fatalf("Lookup = %d, %v", len(got), err)
	}
}

// Attacks options 1 and 3 across the kind rename under Normalize: the messages of an
// insert and two renames (Jones -> Smith -> JONES) delivered again in reverse order, twice
// each, half of them under the legacy kind "indexentity/<name>", plus forged messages of
// the new kind (an Old value no store can hold, a key with a control character). The lists must
// end exact: only "jones" lists the entity.
func TestAttackEventualLegacyAndNewKindsNormalizedAndForged(t *testing.T) {
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
		for _, kind := range []string{ix.Kind(), "indexentity/LastName"} {
			if _, err := queueworker.Enqueue(b.Ctx, q, kind, "", msgs[i].Payload, nil); err != nil {
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
	got, err := ix.Lookup(b.Ctx, "Jones")
	if err != nil || len(got) != 1 {
		t.Fatalf("Lookup = %+v, %v", got, err)
	}
}

// Attacks the Settle/2 protocol's "looks again later until the message was Settle old"
// with a forged envelope (DESIGN "Untrusted data": a counter in an envelope): EnqueuedAt
// is written by whoever enqueued, and one far in the future announcing a state that never
// comes makes the message younger than Settle forever (snoozes do not count towards
// MaxDequeueCount, so it is dequeued every second until its TTL). The service's
// InsertionTime is in the message; even long after the queue stored it
// (here: 100 x Settle later by the handler's clock), the handler must stop waiting.
func TestAttackEventualForgedFutureEnqueuedAtNeverSettles(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s := b.tableStore(0)
	ix := b.eventual(s, b.queue())
	stored := time.Now()
	msg := &queueworker.Message[Change]{Payload: Change{PartitionKey: "Sales", RowKey: "000404", Value: "Ghost"},
		EnqueuedAt: stored.Add(100 * 365 * 24 * time.Hour), InsertionTime: stored}
	ix.now = func() time.Time { return stored.Add(100 * ix.settle.Settle()) }
	err := ix.Handle(b.Ctx, msg)
	var snooze *queueworker.SnoozeError
	if errors.As(err, &snooze) {
		t.Fatalf("a message stored %v ago (by the handler's clock) still snoozes %v: its forged EnqueuedAt keeps it young for a century", 100*ix.settle.Settle(), snooze.Duration)
	}
	if err != nil {
		t.Fatal(err)
	}
}
