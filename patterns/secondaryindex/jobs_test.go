package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// jobber is the job method set Intra and Inter share (checked at compile time).
type jobber interface {
	BackfillKind() string
	VerifyKind() string
	RepairKind() string
	StartBackfill(context.Context, ...string) error
	StartVerify(context.Context, ...string) error
	StartRepair(context.Context, ...string) error
	Register(*queueworker.Registry) error
}

var (
	_ jobber = (*secondaryindex.Intra[Employee])(nil)
	_ jobber = (*secondaryindex.Inter[Employee])(nil)
)

// driftInter stores five employees with their email copies through an Inter on the
// direct clients (returned, for the test's checks), gives the index each kind of drift
// (employee 1's copy deleted, employee 2's copy edited, an orphan copy of an employee
// that never was), and takes the inserts' messages off q.
func driftInter(t *testing.T, b *bed, q *queueworker.Client) *secondaryindex.Inter[Employee] {
	t.Helper()
	x, err := secondaryindex.NewInter(b.Direct.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail},
		&secondaryindex.InterOptions{SafetyDelay: -1, Conflict: testbed.FastRetry(), Table: repo.Options{Retry: testbed.FastRetry()}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if err := x.Insert(b.Ctx, iemp(i, "F", "L", fmt.Sprintf("e%d@contoso.com", i))); err != nil {
			t.Fatal(err)
		}
		if err := x.Reconcile(b.Ctx, "Sales", fmt.Sprintf("%06d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Raw.Delete(b.Ctx, "email_Sales", interKey("e1@contoso.com", "000001"), nil); err != nil {
		t.Fatal(err)
	}
	c := b.row(t, "email_Sales", interKey("e2@contoso.com", "000002"))
	c.Properties["FirstName"] = "Tampered"
	if err := b.Raw.Upsert(b.Ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	o := &codec.Entity{PartitionKey: "email_Sales", RowKey: interKey("ghost@contoso.com", "000099"), Properties: map[string]any{"FirstName": "Ghost"}}
	if err := b.Raw.Insert(b.Ctx, o); err != nil {
		t.Fatal(err)
	}
	b.TakeMessages(q) // the inserts' reconciliations: already run above
	return x
}

// Two deliveries of one repair job at once: the first is held at the proxy just before
// its first transaction while the second repairs the whole partition; released, the
// held transaction fails its condition and its repair starts over from fresh reads. Both
// deliveries succeed, nothing is poisoned, and the index ends clean with the entity's
// own values (the held write did not bring back what it read).
func TestInterRepairJobDeliveredTwiceAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail) // through the proxies
	direct := driftInter(t, b, q)
	// The same job twice (one id: a duplicate, as a lost enqueue response leaves it).
	for range 2 {
		if _, err := queueworker.Enqueue(b.Ctx, q, x.RepairKind(), "repair-sales", map[string]string{"pk": "Sales"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	ps := b.Proxies.Table.PauseAt("first repair transaction", faultproxy.IsBatch, 1)
	w := b.worker(t, queue, x)
	done := make(chan error, 1)
	go func() { done <- w.Drain(b.Ctx) }()
	testbed.WaitHeld(t, ps)
	testbed.WaitFor(t, "the other delivery to repair the partition", func() bool {
		r, err := direct.Verify(b.Ctx, "Sales", nil)
		return err == nil && r.Drift() == 0
	})
	ps.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Processed != 2 || s.Poisoned != 0 {
		t.Fatalf("worker stats %+v, want both deliveries processed", s)
	}
	mustClean(t, b.Ctx, direct, 5, "Sales")
	if c := b.row(t, "email_Sales", interKey("e2@contoso.com", "000002")); c == nil || c.Properties["FirstName"] != "F" {
		t.Fatalf("stale copy: %+v", c)
	}
	if b.row(t, "email_Sales", interKey("ghost@contoso.com", "000099")) != nil {
		t.Fatal("orphan kept")
	}
}

// A verify job reads and reports: one log line per delivery with the counts, and samples
// that carry the drift kind, the index and the entity's keys only (no copy key, which
// holds the email, and no property), and it writes nothing. The same for an Intra,
// whose jobs use IntraOptions.Queue; a repair job then fixes the drift.
func TestVerifyJobLogsCountsAndKeysOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	core, logs := observer.New(zapcore.InfoLevel)
	tb, err := repo.New[Employee](b.Clients.Tables, b.Table, &repo.Options{Retry: testbed.FastRetry(), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	x, err := secondaryindex.NewIntra(tb, byID, []secondaryindex.Index[Employee]{byEmail}, &secondaryindex.IntraOptions{Conflict: testbed.FastRetry(), Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		if err := x.Insert(b.Ctx, emp(i, "F", "L", fmt.Sprintf("e%d@contoso.com", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Raw.Delete(b.Ctx, "Sales", "email_e1@contoso.com", nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "email_ghost@contoso.com", Properties: map[string]any{"EmployeeId": "000099"}}); err != nil {
		t.Fatal(err)
	}
	w := b.Worker(q, x.Register)
	if err := x.StartVerify(b.Ctx); err != nil {
		t.Fatal(err)
	}
	if err := x.StartVerify(b.Ctx, "Sales"); err != nil { // a second job: reported again, harmless
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	lines := logs.FilterMessage("index verify").All()
	if len(lines) != 2 {
		t.Fatalf("%d verify lines, want 2: %+v", len(lines), logs.All())
	}
	for _, l := range lines {
		f := l.ContextMap()
		if f["pk"] != "Sales" || f["entities"] != int64(4) || f["missing"] != int64(1) || f["orphan"] != int64(1) || f["stale"] != int64(0) || f["drift"] != int64(2) || f["repaired"] != int64(0) {
			t.Fatalf("verify line %v", f)
		}
		text := fmt.Sprint(f["samples"])
		if strings.Contains(text, "contoso") || !strings.Contains(text, "missing") || !strings.Contains(text, "orphan") {
			t.Fatalf("samples %s: want drift kinds and keys only", text)
		}
	}
	if r, err := x.Verify(b.Ctx, "Sales", nil); err != nil || r.Drift() != 2 {
		t.Fatalf("the verify jobs wrote: %+v %v", r, err)
	}
	if err := x.StartRepair(b.Ctx, "Sales"); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	if l := logs.FilterMessage("index repair").All(); len(l) != 1 || l[0].ContextMap()["repaired"] != int64(2) {
		t.Fatalf("repair lines %+v", l)
	}
	mustClean(t, b.Ctx, x, 4, "Sales")
}

// StartVerify and StartRepair check every partition before sending anything, and an
// Intra without a queue refuses them.
func TestStartJobsRefuseBadInputBeforeSending(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	in := b.intra(t, byEmail) // no IntraOptions.Queue
	mark, qmark := b.Proxies.Table.Count(), b.Proxies.Queue.Count()
	for name, err := range map[string]error{
		"inter verify, an index partition": x.StartVerify(b.Ctx, "Sales", "email_Sales"),
		"inter repair, a bad key":          x.StartRepair(b.Ctx, "Sales", "a/b"),
		"inter verify, an empty key":       x.StartVerify(b.Ctx, ""),
		"intra verify, no queue":           in.StartVerify(b.Ctx),
		"intra repair, no queue":           in.StartRepair(b.Ctx, "Sales"),
		"intra register, no queue":         in.Register(queueworker.NewRegistry()),
	} {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if n := b.Proxies.Table.Count() - mark; n != 0 {
		t.Errorf("%d table requests sent", n)
	}
	if n := b.Proxies.Queue.Count() - qmark; n != 0 {
		t.Errorf("%d queue requests sent", n)
	}
}

// A repair job whose first transaction lands while its response is lost: the outcome is
// unknown, so the repair decides again from fresh reads (within the job, or on the
// worker's redelivery if the job fails) and never takes the lost answer for a refusal or
// a success. The job succeeds only with the index clean, and nothing is poisoned.
func TestInterRepairJobResponseLostAfterWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	direct := driftInter(t, b, q)
	if err := x.StartRepair(b.Ctx, "Sales"); err != nil {
		t.Fatal(err)
	}
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost repair response", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	w := b.worker(t, queue, x)
	testbed.Drain(t, w)
	if n := b.Proxies.Table.Fired("lost repair response"); n != 1 {
		t.Fatalf("the rule fired %d times", n)
	}
	if s := w.Stats(); s.Poisoned != 0 || s.Processed < 1 {
		t.Fatalf("worker stats %+v", s)
	}
	mustClean(t, b.Ctx, direct, 5, "Sales")
}

// Forged maintenance jobs (a queue is untrusted input) are poisoned before any request
// to the tables: counted at the table service's proxy.
func TestForgedJobsSendNoTableRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	forged := []map[string]any{{"pk": ""}, {"pk": "email_Sales"}, {"pk": "a?b"}, {"pk": "Sales", "after": "x\u0001"}, {"pk": []int{1}}}
	n := 0
	for _, kind := range []string{x.BackfillKind(), x.VerifyKind(), x.RepairKind()} {
		for _, p := range forged {
			if _, err := queueworker.Enqueue(b.Ctx, q, kind, "", p, nil); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	// A resume point is refused on verify and repair jobs only.
	for _, kind := range []string{x.VerifyKind(), x.RepairKind()} {
		if _, err := queueworker.Enqueue(b.Ctx, q, kind, "", map[string]string{"pk": "Sales", "after": "000001"}, nil); err != nil {
			t.Fatal(err)
		}
		n++
	}
	mark := b.Proxies.Table.Count()
	w := b.worker(t, queue, x)
	testbed.Drain(t, w)
	if s := w.Stats(); s.Poisoned != int64(n) || s.Processed != 0 {
		t.Fatalf("worker stats %+v, want %d poisoned", s, n)
	}
	if got := b.Proxies.Table.Count() - mark; got != 0 {
		t.Fatalf("%d table requests for forged jobs", got)
	}
}
