package heterogeneous_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/heterogeneous"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The guide's EmployeeCount stays equal to the number of employees through adds and
// removes, including refused ones.
func TestEmployeeCountFollowsAddsAndDeletes(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, l)
			b.dept(t, "Sales")
			for i := 1; i <= 4; i++ {
				if err := b.depts.Add(b.ctx, b.emp("Sales", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.depts.Delete(b.ctx, "Sales", b.l.empKey("000002"), nil); err != nil {
				t.Fatal(err)
			}
			b.checkCount(t, "Sales", 3)
			if err := b.depts.Add(b.ctx, b.emp("Sales", 1)); !errors.Is(err, repo.ErrAlreadyExists) {
				t.Fatalf("add of an existing employee: %v", err)
			}
			if err := b.depts.Delete(b.ctx, "Sales", b.l.empKey("000002"), nil); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("remove of a removed employee: %v", err)
			}
			if err := b.depts.Add(b.ctx, b.emp("Marketing", 9)); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("add to a department that does not exist: %v", err)
			}
			if err := b.depts.Delete(b.ctx, "Sales", b.l.deptKey, nil); !errors.Is(err, repo.ErrInvalidInput) {
				t.Fatalf("remove of the department itself: %v", err)
			}
			b.checkCount(t, "Sales", 3)
			// With the ETag read, a child changed since is not deleted; the current one is.
			read, err := heterogeneous.Get[Employee](b.ctx, b.t, "Sales", b.l.empKey("000003"))
			if err != nil {
				t.Fatal(err)
			}
			changed := read
			changed.Age++
			if err := heterogeneous.Update(b.ctx, b.t, &changed, nil); err != nil {
				t.Fatal(err)
			}
			if err := b.depts.Delete(b.ctx, "Sales", read.RowKey, &repo.DeleteOptions{ETag: read.ETag}); !errors.Is(err, repo.ErrPreconditionFailed) {
				t.Fatalf("delete with a stale ETag: %v, want ErrPreconditionFailed", err)
			}
			b.checkCount(t, "Sales", 3)
			if err := b.depts.Delete(b.ctx, "Sales", read.RowKey, &repo.DeleteOptions{ETag: changed.ETag}); err != nil {
				t.Fatal(err)
			}
			b.checkCount(t, "Sales", 2)
		})
	}
}

// At least 20 goroutines adding employees (and some removing them) at once: every
// increment and decrement lands, the count equals the employees stored.
func TestConcurrentAddsLoseNoIncrement(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	const writers, each = 20, 3
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := w*100 + i
				if err := b.depts.Add(b.ctx, b.emp("Sales", id)); err != nil {
					errs <- err
					return
				}
				if i == 0 && w%4 == 0 {
					if err := b.depts.Delete(b.ctx, "Sales", b.l.empKey(fmt.Sprintf("%06d", id)), nil); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	b.checkCount(t, "Sales", writers*each-writers/4)
}

// Faults on the transaction: a lost response is recognised as applied (counted once), a
// busy server is retried, a refused transaction changes nothing and can be run again.
func TestAddUnderFaults(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	p := b.Proxy()
	p.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	// Without write tracking, repo may answer a retried transaction whose first attempt
	// landed with ErrOutcomeUnknown (never "nothing written"); the child is written once
	// either way.
	if err := b.depts.Add(b.ctx, b.emp("Sales", 1)); err != nil && !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("add through a lost response: %v", err)
	}
	b.checkCount(t, "Sales", 1)
	p.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsBatch, Times: 2, Action: faultproxy.Respond(503, "ServerBusy")})
	if err := b.depts.Add(b.ctx, b.emp("Sales", 2)); err != nil {
		t.Fatalf("add through a busy server: %v", err)
	}
	p.AddRule(faultproxy.Rule{Name: "refused", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.Respond(403, "AuthorizationFailure")})
	if err := b.depts.Add(b.ctx, b.emp("Sales", 3)); err == nil {
		t.Fatal("add through a refused transaction succeeded")
	}
	b.checkCount(t, "Sales", 2) // the refused add changed nothing
	if err := b.depts.Add(b.ctx, b.emp("Sales", 3)); err != nil {
		t.Fatalf("rerun of the refused add: %v", err)
	}
	b.checkCount(t, "Sales", 3)
	if p.Fired("lost") != 1 || p.Fired("busy") != 2 || p.Fired("refused") != 1 {
		t.Fatalf("faults fired: %d %d %d", p.Fired("lost"), p.Fired("busy"), p.Fired("refused"))
	}
}

// Employees written around the relationship make the count wrong; Recount repairs it.
func TestRecount(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[1])
	b.dept(t, "Sales")
	for i := 1; i <= 5; i++ {
		if err := heterogeneous.Insert(b.ctx, b.t, b.emp("Sales", i)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := b.depts.Recount(b.ctx, "Sales")
	if err != nil || n != 5 {
		t.Fatalf("recount: %d %v", n, err)
	}
	b.checkCount(t, "Sales", 5)
	if _, err := b.depts.Recount(b.ctx, "Nowhere"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("recount without a department: %v", err)
	}
}

// competitor is a OneToMany over b's table on clients that bypass the proxies: the
// competing writer of a window test, never held by a pause.
func (b *bed) competitor(t *testing.T) *heterogeneous.OneToMany[Department, Employee, int32] {
	t.Helper()
	direct, err := repo.New[codec.Entity](b.Direct.Tables, b.Table, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	_, r := departments(t, direct, b.l)
	return r
}

// Holds "a writer that loses the race on the parent's ETag re-reads it and retries ...
// so concurrent adds lose no increment" at its window: an Add that read the parent is
// held before its transaction while another Add (and a Delete) commits; released, its
// transaction fails on the parent's ETag, nothing of it is written, and it starts over.
func TestOneToManyWindowConcurrentAdd(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	other := b.competitor(t)
	if err := other.Add(b.ctx, b.emp("Sales", 1)); err != nil {
		t.Fatal(err)
	}
	ps := b.Proxy().PauseAt("held add", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() { done <- b.depts.Add(b.ctx, b.emp("Sales", 2)) }()
	if err := ps.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Add(b.ctx, b.emp("Sales", 3)); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(b.ctx, "Sales", b.emp("Sales", 1).RowKey, nil); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatalf("held add: %v", err)
	}
	b.checkCount(t, "Sales", 2)
	if n := b.Proxy().CountMatching(func(r faultproxy.RequestInfo) bool { return r.Method == "POST" && strings.HasSuffix(r.Path, "$batch") }); n != 2 {
		t.Fatalf("%d transactions through the proxy, want 2 (the held one failed, the retry landed)", n)
	}
}

// Holds Recount's "a child added or removed meanwhile changes the parent, and the count
// starts over" at its window: Recount's update of the parent is held while a child is
// added; released, it fails on the parent's ETag and counts again.
func TestRecountWindowConcurrentAdd(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	other := b.competitor(t)
	for i := 1; i <= 3; i++ { // around the relationship: the count stays 0
		if err := heterogeneous.Insert(b.ctx, b.t, b.emp("Sales", i)); err != nil {
			t.Fatal(err)
		}
	}
	ps := b.Proxy().PauseAt("held recount update", faultproxy.All(faultproxy.IsEntityWrite, faultproxy.Not(faultproxy.IsInsertEntity)), 1)
	t.Cleanup(ps.Release)
	type result struct {
		n   int32
		err error
	}
	done := make(chan result, 1)
	go func() { n, err := b.depts.Recount(b.ctx, "Sales"); done <- result{n, err} }()
	if err := ps.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Add(b.ctx, b.emp("Sales", 4)); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if r := <-done; r.err != nil || r.n != 4 {
		t.Fatalf("recount: %d, %v; want 4", r.n, r.err)
	}
	b.checkCount(t, "Sales", 4)
}
