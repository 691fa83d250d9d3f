package denormalize

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The guide's case: the Sales department entity keeps a copy of its manager's details, and
// both live in the Sales partition, so one transaction keeps them consistent.
func TestInPartitionGuideFlow(t *testing.T) {
	t.Parallel()
	b := setup(t, true, false)
	r := b.relation(nil)
	ctx := b.Ctx
	jones, cao := manager("Sales", "000152", "Jun", "Jones", "555-0152"), manager("Sales", "000155", "Jun", "Cao", "555-0155")
	b.insert(jones, cao)
	sales := dept("Sales", "DEPARTMENT", "Sales", jones)
	if err := r.PutTarget(ctx, sales); err != nil {
		t.Fatal(err)
	}
	if sales.ManagerName != "Jun Jones" || sales.ManagerPhone != "555-0152" || sales.ETag == "" {
		t.Fatalf("PutTarget did not copy the manager: %+v", sales)
	}
	// One point query returns the department with its manager's details.
	got := b.checkCopy(r, Key{"Sales", "DEPARTMENT"})
	if got.ManagerName != "Jun Jones" {
		t.Fatalf("stored copy %+v", got)
	}
	b.checkCopies(r, Key{"Sales", "000152"}, Key{"Sales", "DEPARTMENT"})

	// The manager's phone changes: the employee and the department in one transaction.
	batches := func() int {
		return b.Proxies.Table.CountMatching(func(ri faultproxy.RequestInfo) bool { return strings.HasSuffix(ri.Path, "$batch") })
	}
	mark := batches()
	jones.Phone = "555-9999"
	if err := r.UpdateSource(ctx, jones); err != nil {
		t.Fatal(err)
	}
	if n := batches() - mark; n != 1 {
		t.Fatalf("UpdateSource sent %d transactions, want 1", n)
	}
	if d := b.checkCopy(r, Key{"Sales", "DEPARTMENT"}); d.ManagerPhone != "555-9999" {
		t.Fatalf("copy not refreshed: %+v", d)
	}

	// A new manager: the copy and the links move in one transaction.
	sales = dept("Sales", "DEPARTMENT", "Sales", cao)
	if err := r.PutTarget(ctx, sales); err != nil {
		t.Fatal(err)
	}
	b.checkCopy(r, Key{"Sales", "DEPARTMENT"})
	b.checkCopies(r, Key{"Sales", "000152"})
	b.checkCopies(r, Key{"Sales", "000155"}, Key{"Sales", "DEPARTMENT"})
	if b.header(r, Key{"Sales", "000152"}) != 0 || b.header(r, Key{"Sales", "000155"}) != 1 {
		t.Fatalf("headers: %d, %d", b.header(r, Key{"Sales", "000152"}), b.header(r, Key{"Sales", "000155"}))
	}
	// The old manager's updates no longer touch the department.
	jones.Phone = "555-0000"
	if err := r.UpdateSource(ctx, jones); err != nil {
		t.Fatal(err)
	}
	b.checkCopy(r, Key{"Sales", "DEPARTMENT"})

	// A department without manager, then deleted.
	other := dept("Sales", "DEPT_EAST", "Sales East", nil)
	if err := r.PutTarget(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteTarget(ctx, Key{"Sales", "DEPARTMENT"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteTarget(ctx, Key{"Sales", "DEPARTMENT"}, nil); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	b.checkCopies(r, Key{"Sales", "000155"})
	if b.header(r, Key{"Sales", "000155"}) != 0 {
		t.Fatalf("header still counts a deleted copy")
	}
	if err := r.PutTarget(ctx, dept("Sales", "DEPT_WEST", "West", manager("Sales", "000999", "", "", ""))); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("a target naming a missing source: %v", err)
	}
}

// An UpdateSource and a PutTarget of one source that race: PutTarget read the old details,
// UpdateSource commits, then PutTarget's transaction meets the moved header, reads again
// and copies the new details.
func TestInPartitionPutRacesWithUpdateSource(t *testing.T) {
	t.Parallel()
	b := setup(t, false, false)
	r := b.relation(nil)
	jones := manager("Sales", "000152", "Jun", "Jones", "old")
	b.insert(jones)
	if err := r.PutTarget(b.Ctx, dept("Sales", "DEPT_A", "A", jones)); err != nil {
		t.Fatal(err)
	}
	type slow struct{}
	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var transactions atomic.Int32
	r.seams.step = func(ctx context.Context, step string) error {
		if ctx.Value(slow{}) != nil {
			transactions.Add(1)
			once.Do(func() { paused <- struct{}{}; <-resume })
		}
		return nil
	}
	done := make(chan error)
	go func() {
		done <- r.PutTarget(context.WithValue(b.Ctx, slow{}, true), dept("Sales", "DEPT_B", "B", jones))
	}()
	<-paused
	update := manager("Sales", "000152", "Jun", "Jones", "new")
	if err := r.UpdateSource(b.Ctx, update); err != nil {
		t.Fatal(err)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if transactions.Load() != 2 {
		t.Fatalf("PutTarget sent %d transactions; it should have met the header's new ETag and retried once", transactions.Load())
	}
	for _, id := range []string{"DEPT_A", "DEPT_B"} {
		if d := b.checkCopy(r, Key{"Sales", id}); d.ManagerPhone != "new" {
			t.Fatalf("%s copies %q", id, d.ManagerPhone)
		}
	}
	if b.header(r, Key{"Sales", "000152"}) != 2 {
		t.Fatalf("header counts %d copies", b.header(r, Key{"Sales", "000152"}))
	}
}

// 20 goroutines update one manager and assign departments to them at once; every copy
// ends equal to the manager's details and the links are exact.
func TestInPartitionConcurrentWriters(t *testing.T) {
	t.Parallel()
	b := setup(t, false, false)
	r := b.relation(nil)
	jones := manager("Sales", "000152", "Jun", "Jones", "0")
	b.insert(jones)
	var wg sync.WaitGroup
	var want []Key
	for i := range 10 {
		id := fmt.Sprintf("DEPT_%02d", i)
		want = append(want, Key{"Sales", id})
		wg.Go(func() {
			if err := r.PutTarget(b.Ctx, dept("Sales", id, id, jones)); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := r.UpdateSource(b.Ctx, manager("Sales", "000152", "Jun", "Jones", fmt.Sprint(i+1))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, k := range want {
		b.checkCopy(r, k)
	}
	b.checkCopies(r, Key{"Sales", "000152"}, want...)
	if n := b.header(r, Key{"Sales", "000152"}); n != len(want) {
		t.Fatalf("header counts %d", n)
	}
}

// The transaction limit is enforced when a copy is linked, never when the source is
// updated; input that breaks a rule is refused before any request.
func TestInPartitionLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, true, false)
	r := b.relation(&Options{MaxCopies: 2})
	jones := manager("Sales", "000152", "Jun", "Jones", "1")
	b.insert(jones)
	for _, id := range []string{"D1", "D2"} {
		if err := r.PutTarget(b.Ctx, dept("Sales", id, id, jones)); err != nil {
			t.Fatal(err)
		}
	}
	batches := func() int {
		return b.Proxies.Table.CountMatching(func(ri faultproxy.RequestInfo) bool { return strings.HasSuffix(ri.Path, "$batch") })
	}
	mark := batches()
	var ie *repo.InvalidInputError
	if err := r.PutTarget(b.Ctx, dept("Sales", "D3", "D3", jones)); !errors.As(err, &ie) || ie.Limit != 2 {
		t.Fatalf("third copy: %v", err)
	}
	if batches() != mark {
		t.Fatal("a refused copy sent a transaction")
	}
	// Re-putting a linked copy is not a new copy.
	if err := r.PutTarget(b.Ctx, dept("Sales", "D2", "D2 renamed", jones)); err != nil {
		t.Fatal(err)
	}

	count := b.Proxies.Table.Count()
	lo, _ := r.KeyRange()
	for name, f := range map[string]func() error{
		"other partition": func() error { return r.PutTarget(b.Ctx, dept("Marketing", "D1", "M", jones)) },
		"nil target":      func() error { return r.PutTarget(b.Ctx, nil) },
		"nil source":      func() error { return r.UpdateSource(b.Ctx, nil) },
		"source in links": func() error { return r.UpdateSource(b.Ctx, manager("Sales", lo+"x", "", "", "")) },
		"target in links": func() error { return r.PutTarget(b.Ctx, dept("Sales", lo+"x", "", nil)) },
		"bad target key":  func() error { return r.DeleteTarget(b.Ctx, Key{"Sales", "a/b"}, nil) },
		"empty partition": func() error { _, err := r.Copies(b.Ctx, Key{"", "1"}); return err },
		"source key too long": func() error {
			return r.PutTarget(b.Ctx, dept("Sales", "D9", "", manager("Sales", strings.Repeat("9", 500), "", "", "")))
		},
	} {
		if err := f(); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if n := b.Proxies.Table.Count() - count; n != 0 {
		t.Fatalf("%d requests sent for refused input", n)
	}
	for name, o := range map[string]*Options{
		"max copies":   {MaxCopies: 99},
		"short settle": {Settle: time.Second},
	} {
		if _, err := New(b.emps, b.depts, "Manager", managerOf, copyManager, o); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewAcross(b.emps, b.depts, "Manager", managerOf, copyManager, nil, nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("across, no queue: %v", err)
	}
	for name, f := range map[string]func() error{
		"no name": func() error { _, err := New(b.emps, b.depts, "", managerOf, copyManager, nil); return err },
		"no ref":  func() error { _, err := New(b.emps, b.depts, "Manager", nil, copyManager, nil); return err },
		"no copy": func() error {
			_, err := New[Employee, Department](b.emps, b.depts, "Manager", managerOf, nil, nil)
			return err
		},
	} {
		if err := f(); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
	other := must(repo.New[Department](b.Clients.Tables, b.emps.Name()+"x", nil))
	if _, err := New(b.emps, other, "M", managerOf, copyManager, nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("InPartition across tables: %v", err)
	}
}

// Optimistic concurrency on the caller's ETags, faults on the wire and a stop before the
// transaction.
func TestInPartitionETagsAndFaults(t *testing.T) {
	t.Parallel()
	b := setup(t, true, false)
	r := b.relation(nil)
	jones := manager("Sales", "000152", "Jun", "Jones", "1")
	b.insert(jones)
	sales := dept("Sales", "DEPARTMENT", "Sales", jones)
	if err := r.PutTarget(b.Ctx, sales); err != nil {
		t.Fatal(err)
	}
	stale := *jones
	jones.Phone = "2"
	if err := r.UpdateSource(b.Ctx, jones); err != nil {
		t.Fatal(err)
	}
	stale.Phone = "3"
	if err := r.UpdateSource(b.Ctx, &stale); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("stale source update: %v", err)
	}
	staleDept := *sales // its ETag predates the refresh of its copy
	staleDept.EmployeeCount = 99
	if err := r.PutTarget(b.Ctx, &staleDept); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("stale target put: %v", err)
	}
	if err := r.DeleteTarget(b.Ctx, Key{"Sales", "DEPARTMENT"}, &repo.DeleteOptions{ETag: sales.ETag}); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("stale target delete: %v", err)
	}
	if d := b.checkCopy(r, Key{"Sales", "DEPARTMENT"}); d.ManagerPhone != "2" || d.EmployeeCount != 10 {
		t.Fatalf("department %+v", d)
	}

	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.Respond(503, "ServerBusy")})
	jones.ETag, jones.Phone = "", "4"
	// Without write tracking, the retry that meets its own landed transaction cannot
	// prove it was its own: the answer is the unknown outcome, never a second write.
	if err := r.UpdateSource(b.Ctx, jones); !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("update with a lost response and a busy server: %v, want ErrOutcomeUnknown", err)
	}
	if b.Proxies.Table.Fired("lost")+b.Proxies.Table.Fired("busy") != 2 {
		t.Fatal("faults did not fire")
	}
	b.checkCopy(r, Key{"Sales", "DEPARTMENT"})

	crash := errors.New("process stopped")
	r.seams.step = func(context.Context, string) error { return crash }
	jones.ETag, jones.Phone = "", "5"
	if err := r.UpdateSource(b.Ctx, jones); !errors.Is(err, crash) {
		t.Fatalf("stopped update: %v", err)
	}
	if d := b.checkCopy(r, Key{"Sales", "DEPARTMENT"}); d.ManagerPhone != "4" {
		t.Fatalf("a stopped update changed something: %+v", d)
	}
	r.seams.step = nil
	if err := r.UpdateSource(b.Ctx, jones); err != nil {
		t.Fatal(err)
	}
	if d := b.checkCopy(r, Key{"Sales", "DEPARTMENT"}); d.ManagerPhone != "5" {
		t.Fatalf("rerun: %+v", d)
	}
}

// Holds "UpdateSource and PutTarget that race for one source
// conflict, and the loser reads again and starts over ... no copy is ever left stale by
// a race" (InPartition) at each of PutTarget's windows: its request number n (the reads
// of the target, the source's links and the source, then the transaction) is held while a
// concurrent UpdateSource of the source commits; the copy must end up current.
func TestInPartitionWindowPutTargetRacesUpdateSource(t *testing.T) {
	t.Parallel()
	for _, w := range []struct {
		name  string
		match func(*http.Request) bool
		nth   int
	}{
		{"after the target read", faultproxy.IsTableQuery, 2},
		{"between the two reads of the source's state", faultproxy.IsTableQuery, 3},
		{"before the transaction", faultproxy.IsBatch, 1},
	} {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true, false)
			r := b.relation(nil)
			other := b.direct(nil)
			jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
			b.insert(jones)
			ps := b.Proxies.Table.PauseAt("PutTarget "+w.name, w.match, w.nth)
			t.Cleanup(ps.Release)
			done := make(chan error, 1)
			go func() { done <- r.PutTarget(b.Ctx, dept("Sales", "dept!Sales", "Sales", jones)) }()
			testbed.WaitHeld(t, ps)
			upd := *jones
			upd.Phone, upd.ETag = "555-9999", ""
			if err := other.UpdateSource(b.Ctx, &upd); err != nil {
				t.Fatal(err)
			}
			ps.Release()
			if err := <-done; err != nil {
				t.Fatalf("PutTarget: %v", err)
			}
			if d := b.checkCopy(r, Key{"Sales", "dept!Sales"}); d.ManagerPhone != "555-9999" {
				t.Fatalf("copy %+v", d)
			}
			b.checkCopies(r, Key{"Sales", "000152"}, Key{"Sales", "dept!Sales"})
			if n := b.header(r, Key{"Sales", "000152"}); n != 1 {
				t.Fatalf("header counts %d copies, want 1", n)
			}
		})
	}
}

// The InPartition promise "sources and copies change together or not at all", held at
// UpdateSource's window: its transaction is held while the target is re-put with a fresh
// copy by another writer; the held transaction then fails its conditions and starts over,
// and the copy is current.
func TestInPartitionWindowUpdateSourceRacesPutTarget(t *testing.T) {
	t.Parallel()
	b := setup(t, true, false)
	r := b.relation(nil)
	other := b.direct(nil)
	jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
	b.insert(jones)
	if err := other.PutTarget(b.Ctx, dept("Sales", "dept!Sales", "Sales", jones)); err != nil {
		t.Fatal(err)
	}
	ps := b.Proxies.Table.PauseAt("UpdateSource transaction", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	upd := *jones
	upd.Phone, upd.ETag = "555-9999", ""
	done := make(chan error, 1)
	go func() { done <- r.UpdateSource(b.Ctx, &upd) }()
	testbed.WaitHeld(t, ps)
	if err := other.PutTarget(b.Ctx, dept("Sales", "dept!Support", "Support", jones)); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatalf("UpdateSource: %v", err)
	}
	for _, id := range []string{"dept!Sales", "dept!Support"} {
		if d := b.checkCopy(r, Key{"Sales", id}); d.ManagerPhone != "555-9999" {
			t.Fatalf("%s: copy %+v", id, d)
		}
	}
	if n := b.header(r, Key{"Sales", "000152"}); n != 2 {
		t.Fatalf("header counts %d copies, want 2", n)
	}
}
