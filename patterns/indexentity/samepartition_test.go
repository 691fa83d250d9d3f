package indexentity

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
)

// The guide's walk-through of option 2: add employees, find the Joneses of Sales, rename
// one (three entities in one transaction), delete one.
func TestSamePartitionGuideFlow(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ix := b.samePartition(nil)
	ctx := b.Ctx
	for _, e := range []*Employee{emp("Sales", "000152", "Jones"), emp("Sales", "000155", "Jones"), emp("Sales", "000160", "Smith"), emp("Marketing", "000223", "Jones")} {
		if err := ix.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
		if e.ETag == "" {
			t.Fatalf("Insert did not set the ETag of %s", e.EmployeeID)
		}
	}
	ids, err := ix.IDs(ctx, "Sales", "Jones")
	if err != nil || !slices.Equal(ids, []string{"000152", "000155"}) {
		t.Fatalf("IDs(Sales, Jones) = %v, %v", ids, err)
	}
	jones, err := collect(ix.Find(ctx, "Sales", "Jones", nil))
	if err != nil || len(jones) != 2 || jones[0].EmployeeID != "000152" || jones[1].Email != "000155@contoso.com" {
		t.Fatalf("Lookup(Sales, Jones) = %+v, %v", jones, err)
	}
	if other, _ := collect(ix.Find(ctx, "Marketing", "Jones", nil)); len(other) != 1 {
		t.Fatalf("the index is per partition: Marketing has %d Joneses", len(other))
	}
	if none, err := collect(ix.Find(ctx, "Sales", "Nobody", nil)); err != nil || len(none) != 0 {
		t.Fatalf("unknown value: %v, %v", none, err)
	}

	// Rename: the employee, the old index entity and the new one, in one transaction.
	e := &jones[0]
	e.LastName = "Smith"
	p := b.tableProxy()
	mark := p.CountMatching(func(r faultproxy.RequestInfo) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.Path, "$batch")
	})
	if err := ix.Update(ctx, e); err != nil {
		t.Fatal(err)
	}
	if n := p.CountMatching(func(r faultproxy.RequestInfo) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.Path, "$batch")
	}) - mark; n != 1 {
		t.Fatalf("rename sent %d transactions, want 1", n)
	}
	b.checkIndex(ix, "Sales")
	if ids, _ := ix.IDs(ctx, "Sales", "Smith"); !slices.Equal(ids, []string{"000152", "000160"}) {
		t.Fatalf("after rename Smith lists %v", ids)
	}
	// An update that keeps the value leaves the index alone.
	e.Age = 50
	if err := ix.Update(ctx, e); err != nil {
		t.Fatal(err)
	}
	// Renaming the last Jones deletes the Jones index entity.
	last := &jones[1]
	last.LastName = ""
	if err := ix.Update(ctx, last); err != nil {
		t.Fatal(err)
	}
	if ids, _ := ix.IDs(ctx, "Sales", "Jones"); len(ids) != 0 {
		t.Fatalf("Jones still lists %v", ids)
	}
	if err := ix.Delete(ctx, "Sales", "000160", nil); err != nil {
		t.Fatal(err)
	}
	if err := ix.Delete(ctx, "Sales", "000160", nil); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
	b.checkIndex(ix, "Sales")
	if ids, _ := ix.IDs(ctx, "Sales", "Smith"); !slices.Equal(ids, []string{"000152"}) {
		t.Fatalf("after delete Smith lists %v", ids)
	}
	// Inserting an existing employee fails on the employee, not on the index.
	if err := ix.Insert(ctx, emp("Sales", "000152", "Jones")); !errors.Is(err, repo.ErrAlreadyExists) {
		t.Fatalf("duplicate insert: %v", err)
	}
	b.checkIndex(ix, "Sales")
}

// The Done-when item: at least 20 goroutines adding employees with the same last name
// lose no id. They all start with no index entity, so they also race on creating it.
func TestSamePartitionConcurrentWritersLoseNoID(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	var conflicts atomic.Int64
	ix := b.samePartition(nil)
	ix.seams.step = func(context.Context, string) error { conflicts.Add(1); return nil }
	const writers, each = 24, 3
	var wg sync.WaitGroup
	errc := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := ix.Insert(b.Ctx, emp("Sales", fmt.Sprintf("%03d%03d", w, i), "Jones")); err != nil {
					errc <- err
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	ids, err := ix.IDs(b.Ctx, "Sales", "Jones")
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != writers*each {
		t.Fatalf("index lists %d ids, want %d", len(ids), writers*each)
	}
	b.checkIndex(ix, "Sales")
	if attempts := conflicts.Load(); attempts <= writers*each {
		t.Fatalf("%d transactions for %d inserts: the writers never contended, the test proves nothing", attempts, writers*each)
	}
	t.Logf("%d inserts took %d transactions", writers*each, conflicts.Load())
}

// Two writers read "no index entity for Jones" and both insert it: one wins, the other
// gets 409 on the index entity, reads again and updates it.
func TestSamePartitionFirstCreationRace(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(nil)
	bothRead := make(chan struct{})
	var ready sync.WaitGroup
	ready.Add(2)
	var calls atomic.Int32
	ix.seams.step = func(ctx context.Context, step string) error {
		if calls.Add(1) <= 2 { // the first attempt of each writer waits for the other's read
			ready.Done()
			<-bothRead
		}
		return nil
	}
	go func() { ready.Wait(); close(bothRead) }()
	var wg sync.WaitGroup
	for _, id := range []string{"000001", "000002"} {
		wg.Go(func() {
			if err := ix.Insert(b.Ctx, emp("Sales", id, "Jones")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := calls.Load(); got != 3 {
		t.Fatalf("%d transactions, want 3 (one writer retried once)", got)
	}
	ids, _ := ix.IDs(b.Ctx, "Sales", "Jones")
	if !slices.Equal(ids, []string{"000001", "000002"}) {
		t.Fatalf("index lists %v", ids)
	}
	b.checkIndex(ix, "Sales")
}

// An insert reads the index, finds its id listed (the entity it replaces still exists),
// and before it writes, another writer deletes that entity and its entry. The insert must
// not succeed without listing its entity: the page it read is sent back as a guard
// conditional on its ETag, so the insert fails with 412, reads again, and lists the id.
func TestSamePartitionInsertRacesDeleteOfTheSameID(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(nil)
	if err := ix.Insert(b.Ctx, emp("Sales", "000004", "Smith")); err != nil {
		t.Fatal(err)
	}
	var raced atomic.Bool
	ix.seams.step = func(ctx context.Context, step string) error {
		if step == "insert" && raced.CompareAndSwap(false, true) {
			// The insert has read the index (000004 listed); the entity goes away now.
			return ix.Delete(ctx, "Sales", "000004", nil)
		}
		return nil
	}
	if err := ix.Insert(b.Ctx, emp("Sales", "000004", "Smith")); err != nil {
		t.Fatalf("insert after the concurrent delete: %v", err)
	}
	if !raced.Load() {
		t.Fatal("the race was not staged")
	}
	ids, err := ix.IDs(b.Ctx, "Sales", "Smith")
	if err != nil || !slices.Equal(ids, []string{"000004"}) {
		t.Fatalf("index lists %v (%v): the inserted entity is not listed", ids, err)
	}
	b.checkIndex(ix, "Sales")
}

// Writers insert, rename and delete at random over a few values and shared ids; whatever
// the interleaving, the index ends up listing exactly what the entities say.
func TestSamePartitionConcurrentMixedWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(&SamePartitionOptions{PageBytes: 64})
	names := []string{"Jones", "Smith", "O'Brien", "Cao"}
	var wg sync.WaitGroup
	for w := range 20 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 6 {
				id := fmt.Sprintf("%06d", rng.IntN(30))
				name := names[rng.IntN(len(names))]
				var err error
				switch rng.IntN(3) {
				case 0:
					err = ix.Insert(b.Ctx, emp("Sales", id, name))
					if errors.Is(err, repo.ErrAlreadyExists) {
						err = nil
					}
				case 1:
					err = ix.Update(b.Ctx, emp("Sales", id, name))
					if errors.Is(err, repo.ErrNotFound) {
						err = nil
					}
				default:
					err = ix.Delete(b.Ctx, "Sales", id, nil)
					if errors.Is(err, repo.ErrNotFound) {
						err = nil
					}
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	b.checkIndex(ix, "Sales")
}

// A list that outgrows a page spills into more index entities, all read back together; a
// page emptied by deletes disappears.
func TestSamePartitionSpillsAcrossEntities(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(&SamePartitionOptions{PageBytes: 64}) // 4 six-digit ids per page
	var items []*Employee
	for i := range 30 {
		items = append(items, emp("Sales", fmt.Sprintf("%06d", i), "Jones"))
	}
	for _, e := range items {
		if err := ix.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(b.indexPages(ix, "Sales")); n < 7 {
		t.Fatalf("30 ids in pages of 4 took %d index entities", n)
	}
	got, err := collect(ix.Find(b.Ctx, "Sales", "Jones", nil))
	if err != nil || len(got) != 30 {
		t.Fatalf("Lookup = %d entities, %v", len(got), err)
	}
	b.checkIndex(ix, "Sales")
	for i := range 20 {
		if err := ix.Delete(b.Ctx, "Sales", fmt.Sprintf("%06d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(b.indexPages(ix, "Sales")); n > 3 {
		t.Fatalf("10 ids left in %d index entities: empty pages were not deleted", n)
	}
	b.checkIndex(ix, "Sales")
	// New ids fill the free room first.
	for i := range 5 {
		if err := ix.Insert(b.Ctx, emp("Sales", fmt.Sprintf("1%05d", i), "Jones")); err != nil {
			t.Fatal(err)
		}
	}
	b.checkIndex(ix, "Sales")
}

// At the service's real limit: ids of 500 characters fill the 64 KiB property after 65
// of them; the 66th goes to a second index entity, and no write is refused by the codec
// or by Submit's 4 MiB check.
func TestSamePartitionSpillsAtTheStringLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(nil)
	long := func(i int) string { return fmt.Sprintf("%06d", i) + strings.Repeat("x", 494) }
	const n = 100
	for i := range n {
		if err := ix.Insert(b.Ctx, emp("Sales", long(i), "Jones")); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	pages := b.indexPages(ix, "Sales")
	if len(pages) != 2 {
		t.Fatalf("%d index entities for %d ids of 1,000 bytes, want 2", len(pages), n)
	}
	for _, p := range pages {
		if size := utf16Bytes(p.Properties["IDs"].(string)); size > 64<<10 {
			t.Fatalf("page %q holds %d bytes", p.RowKey, size)
		}
	}
	// A rename between two full-size lists: five entities, well under 4 MiB.
	for i := range 3 {
		e, err := b.emps.Get(b.Ctx, "Sales", long(i))
		if err != nil {
			t.Fatal(err)
		}
		e.LastName = "Smith"
		if err := ix.Update(b.Ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	b.checkIndex(ix, "Sales")
}

// Input that cannot be indexed is refused before any request.
func TestSamePartitionRefusesBadInputWithoutRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ix := b.samePartition(&SamePartitionOptions{PageBytes: 100})
	p := b.tableProxy()
	mark := p.Count()
	lo, _ := ix.KeyRange()
	cases := map[string]func() error{
		"nil entity":            func() error { return ix.Insert(b.Ctx, nil) },
		"value over the key":    func() error { return ix.Insert(b.Ctx, emp("Sales", "1", strings.Repeat("J", 600))) },
		"id longer than a page": func() error { return ix.Insert(b.Ctx, emp("Sales", strings.Repeat("9", 51), "Jones")) },
		"RowKey in index range": func() error { return ix.Insert(b.Ctx, emp("Sales", lo+"x", "Jones")) },
		"bad key":               func() error { return ix.Insert(b.Ctx, emp("Sales", "a/b", "Jones")) },
		"empty department":      func() error { return ix.Insert(b.Ctx, emp("", "1", "Jones")) },
		"update too long":       func() error { return ix.Update(b.Ctx, emp("Sales", "1", strings.Repeat("J", 600))) },
		"delete bad key":        func() error { return ix.Delete(b.Ctx, "Sales", "a#b", nil) },
		"find empty value":      func() error { _, err := collect(ix.Find(b.Ctx, "Sales", "", nil)); return err },
		"lookup long value":     func() error { _, err := ix.IDs(b.Ctx, "Sales", strings.Repeat("J", 600)); return err },
		"find negative concurrency": func() error {
			_, err := collect(ix.Find(b.Ctx, "Sales", "Jones", &FindOptions{Concurrency: -1}))
			return err
		},
		"get RowKey in index range": func() error { _, err := ix.Get(b.Ctx, "Sales", lo+"x"); return err },
		"get bad key":               func() error { _, err := ix.Get(b.Ctx, "Sales", "a#b"); return err },
	}
	for name, f := range cases {
		err := f()
		var ie *repo.InvalidInputError
		if !errors.As(err, &ie) || !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want an *InvalidInputError", name, err)
		}
	}
	if n := p.Count() - mark; n != 0 {
		t.Fatalf("%d requests were sent for refused input", n)
	}
	// Option errors at construction.
	for name, c := range map[string]struct {
		name  string
		value func(*Employee) string
		o     *SamePartitionOptions
	}{
		"no name":    {"", lastName, nil},
		"no value":   {"LastName", nil, nil},
		"tiny pages": {"LastName", lastName, &SamePartitionOptions{PageBytes: 10}},
		"huge pages": {"LastName", lastName, &SamePartitionOptions{PageBytes: 1 << 20}},
		"bad policy": {"LastName", lastName, &SamePartitionOptions{Conflict: retry.Policy{Delay: -5}}},
	} {
		if _, err := NewSamePartition(b.emps, c.name, c.value, c.o); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
	type noETag struct {
		Department string `table:",pk"`
		EmployeeID string `table:",rk"`
		LastName   string
	}
	plain := must(repo.New[noETag](b.Clients.Tables, b.Table, nil))
	if _, err := NewSamePartition(plain, "LastName", func(e *noETag) string { return e.LastName }, nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("entity type without ETag: %v", err)
	}
}

// Optimistic concurrency: a stale ETag is refused, and so is a rename based on one.
func TestSamePartitionStaleETag(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(nil)
	e := emp("Sales", "000152", "Jones")
	if err := ix.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	stale := *e
	e.Age++
	if err := ix.Update(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	stale.LastName = "Smith"
	if err := ix.Update(b.Ctx, &stale); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("stale rename: %v", err)
	}
	if err := ix.Delete(b.Ctx, "Sales", "000152", &repo.DeleteOptions{ETag: stale.ETag}); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("stale delete: %v", err)
	}
	b.checkIndex(ix, "Sales")
	if ids, _ := ix.IDs(b.Ctx, "Sales", "Jones"); !slices.Equal(ids, []string{"000152"}) {
		t.Fatalf("Jones lists %v", ids)
	}
}

// Faults: a transaction whose response is lost is retried and recognised as applied; a
// busy server is retried; a stop before the transaction leaves nothing, and a rerun
// completes the write.
func TestSamePartitionFaults(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ix := b.samePartition(nil)
	p := b.tableProxy()

	p.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	// Without write tracking, repo may answer the retry of a transaction whose first
	// attempt landed with ErrOutcomeUnknown (never "nothing written"); the index is exact
	// either way.
	if err := ix.Insert(b.Ctx, emp("Sales", "000001", "Jones")); err != nil && !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("insert with a lost response: %v", err)
	}
	b.checkIndex(ix, "Sales")
	p.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsBatch, Times: 2, Action: faultproxy.Respond(503, "ServerBusy")})
	if err := ix.Insert(b.Ctx, emp("Sales", "000002", "Jones")); err != nil {
		t.Fatalf("insert with a busy server: %v", err)
	}
	if p.Fired("lost") != 1 || p.Fired("busy") != 2 {
		t.Fatalf("faults fired: lost %d, busy %d", p.Fired("lost"), p.Fired("busy"))
	}
	p.AddRule(faultproxy.Rule{Name: "lost rename", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	e := emp("Sales", "000001", "Smith")
	// The retry meets its own landed transaction: without write tracking nothing proves it
	// was this call's, and writing again could undo another writer's change.
	if err := ix.Update(b.Ctx, e); !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("rename with a lost response: %v, want ErrOutcomeUnknown", err)
	}
	b.checkIndex(ix, "Sales")

	// A crash before the transaction: nothing is written; the rerun writes everything.
	crash := errors.New("process stopped")
	ix.seams.step = func(context.Context, string) error { return crash }
	if err := ix.Insert(b.Ctx, emp("Sales", "000003", "Jones")); !errors.Is(err, crash) {
		t.Fatalf("crashed insert: %v", err)
	}
	if _, err := b.emps.Get(b.Ctx, "Sales", "000003"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("a stopped insert left the entity: %v", err)
	}
	b.checkIndex(ix, "Sales")
	ix.seams.step = nil
	if err := ix.Insert(b.Ctx, emp("Sales", "000003", "Jones")); err != nil {
		t.Fatal(err)
	}
	b.checkIndex(ix, "Sales")
	if ids, _ := ix.IDs(b.Ctx, "Sales", "Jones"); !slices.Equal(ids, []string{"000002", "000003"}) {
		t.Fatalf("Jones lists %v", ids)
	}
}

// Option 2's promise "start over from the read when the transaction fails with 412
// (another writer updated the index entity) ... or 404 (another writer deleted it with its
// last id)" at its window: an Insert that read the value's index entity is held before
// its transaction while another writer adds to that entity (412) or deletes its last id
// (404). Released, it reads again and retries: no id is lost, none is left behind.
func TestSamePartitionWindowIndexEntityChangesUnderInsert(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, compete string }{{"412 updated", "insert"}, {"404 deleted", "delete"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			ix := b.samePartition(nil)
			direct, err := account.NewClients(testenv.ConnectionString(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			other := must(NewSamePartition(must(repo.New[Employee](direct.Tables, b.Table, &repo.Options{Retry: fast})), "LastName", lastName, nil))
			if err := other.Insert(b.Ctx, emp("Sales", "000001", "Jones")); err != nil {
				t.Fatal(err)
			}
			ps := b.tableProxy().PauseAt("held insert", faultproxy.IsBatch, 1)
			t.Cleanup(ps.Release)
			done := make(chan error, 1)
			go func() { done <- ix.Insert(b.Ctx, emp("Sales", "000002", "Jones")) }()
			if err := ps.Wait(b.Ctx); err != nil {
				t.Fatal(err)
			}
			want := []string{"000002"}
			if c.compete == "insert" {
				if err := other.Insert(b.Ctx, emp("Sales", "000003", "Jones")); err != nil {
					t.Fatal(err)
				}
				want = []string{"000001", "000002", "000003"}
			} else if err := other.Delete(b.Ctx, "Sales", "000001", nil); err != nil {
				t.Fatal(err)
			}
			ps.Release()
			if err := <-done; err != nil {
				t.Fatalf("held insert: %v", err)
			}
			if ids, err := ix.IDs(b.Ctx, "Sales", "Jones"); err != nil || !slices.Equal(ids, want) {
				t.Fatalf("Jones lists %v (%v), want %v", ids, err, want)
			}
			b.checkIndex(ix, "Sales")
		})
	}
}

// Find reads ahead of its caller by a bounded batch: a caller that stops at the first
// entity leaves the rest of a long list unread.
func TestSamePartitionFindStoppedEarlyReadsNoFurther(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ix := b.samePartition(nil)
	const n = 250
	for i := range n {
		if err := ix.Insert(b.Ctx, emp("Sales", fmt.Sprintf("%04d", i), "Jones")); err != nil {
			t.Fatal(err)
		}
	}
	p := b.tableProxy()
	mark := p.Count()
	var first Employee
	for e, err := range ix.Find(b.Ctx, "Sales", "Jones", &FindOptions{Concurrency: 4}) {
		if err != nil {
			t.Fatal(err)
		}
		first = e
		break
	}
	if first.EmployeeID != "0000" {
		t.Fatalf("first entity %+v, want employee 0000", first)
	}
	// The index entities' range query, then one batch of point queries at most.
	if sent := p.Count() - mark; sent > 1+100 || sent < 2 {
		t.Fatalf("%d requests for one entity of %d, want at most 101", sent, n)
	}
	got, err := collect(ix.Find(b.Ctx, "Sales", "Jones", nil))
	if err != nil || len(got) != n {
		t.Fatalf("Find to the end = %d entities, %v; want %d", len(got), err, n)
	}
}
