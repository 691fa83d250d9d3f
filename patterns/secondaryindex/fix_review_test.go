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

// The refusal of a write-back from a partial copy (TestAttackInterUpdateFromPartialCopyErasesProperties)
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
	if err := x.Delete(b.Ctx, &o[0]); err != nil {
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

// The shape of the review's item 6 on Intra: an Update without an ETag whose transaction
// lands, is reported unknown, and is overtaken by another writer's delete before the
// fresh read. The next round finds the entity gone: "not found" would say "nothing
// updated" of an update that landed, so the answer is the unknown outcome.
func TestIntraUnconditionalUpdateUnknownThenDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail)
	if err := x.Insert(b.Ctx, emp(851, "Ida", "Gone", "ida@contoso.com")); err != nil {
		t.Fatal(err)
	}
	first := true
	secondaryindex.SetIntraAfterSubmit(x, func(err error) error {
		if !first {
			return err
		}
		first = false
		if err != nil {
			t.Errorf("the update transaction did not land: %v", err)
		}
		if err := x.Delete(b.Ctx, emp(851, "", "", "")); err != nil {
			t.Errorf("concurrent delete: %v", err)
		}
		return fmt.Errorf("test: retried transaction: %w (%w)", repo.ErrOutcomeUnknown,
			&repo.Error{Op: "transaction", StatusCode: 412, Code: "UpdateConditionNotSatisfied", Kind: repo.ErrPreconditionFailed})
	})
	err := x.Update(b.Ctx, emp(851, "Ida", "Gone", "ida2@contoso.com"))
	if !errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Update whose transaction landed, then deleted = %v; want ErrOutcomeUnknown, not ErrNotFound", err)
	}
	if rows := b.rows(t, "Sales"); len(rows) != 0 {
		t.Fatalf("rows %q after the delete", rows)
	}
}
