package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// rangeStaff is how many employees of Sales the range archive tests move.
const rangeStaff = 30

// staffEmail is the email of employee n.
func staffEmail(n int) string { return fmt.Sprintf("e%d@contoso.com", n) }

// staff returns employee n of dept (ids 1..): three last names shared by many.
func staff(dept string, n int) *Employee {
	e := emp(n, "Jun", []string{"Jones", "Smith", "Brown"}[n%3], staffEmail(n))
	e.Department = dept
	return e
}

// mustFindNone fails the test if a lookup by email, last name or email range finds any
// employee of dept through x.
func mustFindNone(t *testing.T, b *bed, x interface {
	Lookup(context.Context, string, string, string) (Employee, error)
	Find(context.Context, string, string, string, *secondaryindex.ReadOptions) iter.Seq2[Employee, error]
	Range(context.Context, string, string, string, string, *secondaryindex.ReadOptions) iter.Seq2[Employee, error]
}, dept string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if _, err := x.Lookup(b.Ctx, dept, "email", staffEmail(i)); !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("lookup of archived employee %d's email: %v", i, err)
		}
	}
	for _, last := range []string{"Jones", "Smith", "Brown"} {
		if got := ids(collect(t, x.Find(b.Ctx, dept, "last", last, nil))); got != "" {
			t.Fatalf("find %s after the archive: %q", last, got)
		}
	}
	if got := ids(collect(t, x.Range(b.Ctx, dept, "email", "", "", nil))); got != "" {
		t.Fatalf("every email after the archive: %q", got)
	}
}

// A range archive of the employees of Sales indexed
// within their partition (email and last name copies) deletes every copy in the
// transactions that delete the employees: the partition ends empty, no lookup finds an
// archived employee, Verify finds no drift, and Ops is untouched. The range selects the
// primaries' RowKeys (empid_...): a range over the whole partition selects copies too,
// which Intra refuses as entities (permanent), before anything is written.
func TestArchiveRangeIntraRemovesCopiesInTheDeleteTransactions(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail, byLast)
	for i := 1; i <= rangeStaff; i++ {
		for _, dept := range []string{"Sales", "Ops"} {
			if err := x.Insert(b.Ctx, staff(dept, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, target := b.Archiver(x)

	whole := b.RangeJob(target, "Sales", "", "")
	mark := b.Proxy().CountMatching(testbed.IsWrite)
	if _, err := a.ArchiveRange(b.Ctx, whole); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("a range over copies: %v, want invalid input", err)
	}
	if n := b.Proxy().CountMatching(testbed.IsWrite) - mark; n != 0 {
		t.Fatalf("the refused range sent %d writes", n)
	}
	mustClean(t, b.Ctx, x, rangeStaff, "Sales")

	b.MustArchiveRange(a, b.RangeJob(target, "Sales", "empid_", "empid`"), rangeStaff)
	if got := b.rows(t, "Sales"); len(got) != 0 {
		t.Fatalf("rows left in Sales: %q", got)
	}
	mustFindNone(t, b, x, "Sales", rangeStaff)
	mustClean(t, b.Ctx, x, 0, "Sales")
	mustClean(t, b.Ctx, x, rangeStaff, "Ops")
	if got, err := x.Lookup(b.Ctx, "Ops", "email", staffEmail(7)); err != nil || got.EmployeeID != "000007" {
		t.Fatalf("Ops after the archive of Sales: %+v %v", got, err)
	}
}

// rangeInter returns interStaff's bed, Inter and worker with employees 3 to rangeStaff
// added: rangeStaff employees of Sales, the worker drained.
func rangeInter(t *testing.T, proxied bool) (*bed, *secondaryindex.Inter[Employee], *queueworker.Worker) {
	t.Helper()
	b, x, w := interStaff(t, proxied)
	for i := 3; i <= rangeStaff; i++ {
		e := staff("Sales", i)
		e.RowKey = e.EmployeeID
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	b.drainAfterSafety(t, w)
	mustClean(t, b.Ctx, x, rangeStaff, "Sales")
	return b, x, w
}

// A range archive of the employees of Sales indexed in
// other partitions enqueues their reconciliations before each delete transaction; once
// the worker settled no lookup finds an archived employee, no copy is stored, and Verify
// finds no drift.
func TestArchiveRangeInterRemovesCopiesThroughTheWorker(t *testing.T) {
	t.Parallel()
	b, x, w := rangeInter(t, false)
	a, target := b.Archiver(x)
	b.MustArchiveRange(a, b.RangeJob(target, "Sales", "", ""), rangeStaff)
	b.drainAfterSafety(t, w)
	mustFindNone(t, b, x, "Sales", rangeStaff)
	for _, rk := range b.rows(t, "email_Sales") {
		if !strings.HasPrefix(rk, "!") { // refs ("!" + id) stay as tombstones
			t.Fatalf("an email copy is left: %q", rk)
		}
	}
	mustClean(t, b.Ctx, x, 0, "Sales")
}

// counted wraps a companion and counts the Removals asked of it.
type counted struct {
	consistency.Companion
	asked atomic.Int32
}

func (c *counted) Removal(ctx context.Context, e *codec.Entity) (consistency.Removal, error) {
	c.asked.Add(1)
	return c.Companion.Removal(ctx, e)
}

// Inter bounds its Before (the safety enqueue) and the delete to SafetyDelay/2. The
// batch's delete transaction is held at the proxy past that deadline and never released:
// the archive abandons it and starts the batch over from fresh reads (the companion is
// asked again for every employee, and enqueues again). Abandoned, the held transaction
// either never reaches the service, and the restart's transaction commits, or (detached)
// lands late, as a real service goes on with a request whose client went away, and the
// restart finds the employees gone or meets 404 and reads again. Either way, once the
// worker settled, every employee is archived once, no copy is left and Verify finds no
// drift.
func TestArchiveRangeWithinExpiresBeforeTheDeleteTransaction(t *testing.T) {
	t.Parallel()
	for _, detach := range []bool{false, true} {
		t.Run(map[bool]string{false: "abandoned", true: "abandoned-lands-late"}[detach], func(t *testing.T) {
			t.Parallel()
			b, x, w := rangeInter(t, true)
			comp := &counted{Companion: x}
			a, target := b.Archiver(comp)
			held := b.Proxy().PauseAt("the batch's delete transaction", testbed.DeletesFrom(b.Table), 1)
			t.Cleanup(held.Release) // never released before: the deadline passes while it is held
			if detach {
				held.Detach()
			}
			job := b.RangeJob(target, "Sales", "", "")
			rep, err := a.ArchiveRange(b.Ctx, job)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Proxy().WaitIdle(b.Ctx); err != nil {
				t.Fatal(err)
			}
			if !detach {
				if n := comp.asked.Load(); n != 2*rangeStaff {
					t.Fatalf("Removal asked %d times, want %d (every employee again after the restart)", n, 2*rangeStaff)
				}
				if rep.Moved != rangeStaff || held.Seen() != 2 {
					t.Fatalf("moved %d in %d delete transactions, want %d in 2 (the held one abandoned, then the restart's)", rep.Moved, held.Seen(), rangeStaff)
				}
			}
			b.MustHaveArchivedRange(job, rangeStaff)
			b.drainAfterSafety(t, w)
			mustFindNone(t, b, x, "Sales", rangeStaff)
			mustClean(t, b.Ctx, x, 0, "Sales")
		})
	}
}

// failingAfter wraps a companion: the After of its removals fails (with a secret in its
// message) without running the companion's own.
type failingAfter struct {
	consistency.Companion
	calls atomic.Int32
}

func (c *failingAfter) Removal(ctx context.Context, e *codec.Entity) (consistency.Removal, error) {
	r, err := c.Companion.Removal(ctx, e)
	if r.After != nil {
		r.After = func(context.Context) error {
			c.calls.Add(1)
			return errors.New("queue down: https://acct.queue.core.windows.net/q?sig=s3cr3t")
		}
	}
	return r, err
}

// A failing After (Inter's prompt reconciliation) is logged once per archived employee,
// redacted, and the range archive still succeeds; the Before's reconciliation, enqueued
// invisible, removes the copies once the worker runs it.
func TestArchiveRangeFailingAfterIsLogged(t *testing.T) {
	t.Parallel()
	b, x, w := rangeInter(t, false)
	comp := &failingAfter{Companion: x}
	core, logs := observer.New(zap.WarnLevel)
	a, err := consistency.New(b.Clients, &consistency.Options{Retry: testbed.FastRetry(), Logger: zap.New(core),
		Companions: map[string][]consistency.Companion{b.Table: {comp}}})
	if err != nil {
		t.Fatal(err)
	}
	target := b.NewTableName()
	b.MustArchiveRange(a, b.RangeJob(target, "Sales", "", ""), rangeStaff)
	if n := comp.calls.Load(); n != rangeStaff {
		t.Fatalf("After ran %d times, want %d", n, rangeStaff)
	}
	failed := logs.FilterMessageSnippet("prompt step failed")
	if failed.Len() != rangeStaff {
		t.Fatalf("%d failed Afters logged, want %d: %v", failed.Len(), rangeStaff, logs.All())
	}
	for _, e := range failed.All() {
		if strings.Contains(fmt.Sprint(e.ContextMap()), "s3cr3t") {
			t.Fatalf("the log carries the secret: %v", e.ContextMap())
		}
	}
	b.drainAfterSafety(t, w)
	mustFindNone(t, b, x, "Sales", rangeStaff)
	mustClean(t, b.Ctx, x, 0, "Sales")
}
