package secondaryindex_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The verify job's promise (an entity with a value and no copy is reported as drift): a
// primary stored around the package (data older than the index) in a partition whose
// index partition "email_<pk>" would break the 1 KiB key limit can have no copy. The
// job's report line never reads as a clean partition: either the entity is counted as
// drift or the job fails; a report with entities and drift 0 would be a false "verified".
func TestInterVerifyJobLongPartitionNeverReadsClean(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	core, logs := observer.New(zapcore.InfoLevel)
	x, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail},
		&secondaryindex.InterOptions{SafetyDelay: -1, Conflict: testbed.FastRetry(), Table: repo.Options{Retry: testbed.FastRetry(), Logger: zap.New(core)}})
	if err != nil {
		t.Fatal(err)
	}
	pk := strings.Repeat("p", 510) // 1,020 UTF-16 bytes: a valid key; "email_"+pk is not
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		t.Fatal(err)
	}
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: pk, RowKey: "000001", Properties: map[string]any{
		"EmployeeId": "000001", "FirstName": "F", "LastName": "L", "Email": "e1@contoso.com"}}); err != nil {
		t.Fatal(err)
	}
	err = x.StartVerify(b.Ctx, pk)
	t.Logf("StartVerify: %v", err)
	if err != nil {
		return // refused up front: the operator is told
	}
	w := b.Worker(q, x.Register)
	testbed.Drain(t, w)
	lines := logs.FilterMessage("index verify").All()
	t.Logf("worker stats %+v", w.Stats())
	for _, l := range lines {
		f := l.ContextMap()
		t.Logf("verify line %v", f)
		if f["entities"] == int64(1) && f["drift"] == int64(0) {
			t.Fatalf("the verify job reports partition %q… clean (1 entity, drift 0) though its entity has a value and no copy", pk[:8])
		}
	}
}

// The same promise on an Intra: a primary copy stored around the package whose email no
// copy key can hold (over the 1 KiB key limit once prefixed) has a value and no copy. The
// verify job must not report its partition clean.
func TestIntraVerifyJobUnindexableValueNeverReadsClean(t *testing.T) {
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
	if err := x.Insert(b.Ctx, emp(1, "F", "L", "e1@contoso.com")); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 600) + "@contoso.com" // fits a property, not a key
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "empid_000002", Properties: map[string]any{
		"EmployeeId": "000002", "FirstName": "F", "LastName": "L", "Email": long}}); err != nil {
		t.Fatal(err)
	}
	if err := x.StartVerify(b.Ctx, "Sales"); err != nil {
		t.Fatal(err)
	}
	w := b.Worker(q, x.Register)
	testbed.Drain(t, w)
	t.Logf("worker stats %+v", w.Stats())
	lines := logs.FilterMessage("index verify").All()
	if len(lines) == 0 {
		return // failed instead of reporting: not a false "clean"
	}
	for _, l := range lines {
		f := l.ContextMap()
		delete(f, "samples")
		t.Logf("verify line %v", f)
		if f["entities"] == int64(2) && f["drift"] == int64(0) {
			t.Fatalf("the verify job reports Sales clean (2 entities, drift 0) though employee 000002 has an email and no copy")
		}
	}
}

// The same on an Inter: an employee stored around the package whose email no copy key
// can hold has a value and no copy. Verify counts it (Unindexable, which is drift), so
// the verify job never reports the partition clean.
func TestInterVerifyJobUnindexableValueNeverReadsClean(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	x, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail},
		&secondaryindex.InterOptions{SafetyDelay: -1, Conflict: testbed.FastRetry(), Table: repo.Options{Retry: testbed.FastRetry()}})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 600) + "@contoso.com"
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "000001", Properties: map[string]any{
		"EmployeeId": "000001", "FirstName": "F", "LastName": "L", "Email": long}}); err != nil {
		t.Fatal(err)
	}
	r, err := x.Verify(b.Ctx, "Sales", nil)
	t.Logf("verify: %+v %v", r, err)
	if err == nil && r.Entities == 1 && r.Drift() == 0 {
		t.Fatal("Verify reports Sales clean though employee 000001 has an email and no copy")
	}
}

// The repair job's "repair fixes the drift; an entity whose value cannot be indexed is
// left and reported": one primary copy stored around the package with an email no key
// can hold ('#'; a property over 64 KiB is refused even by Azurite) cannot be rewritten.
// The repair job still fixes the rest of the partition (here an orphan copy and another
// entity's missing copy) rather than abandoning the partition into the poison queue on
// every delivery.
func TestIntraRepairJobFixesThePartitionAroundAnUnindexableEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	tb, err := repo.New[Employee](b.Clients.Tables, b.Table, &repo.Options{Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	x, err := secondaryindex.NewIntra(tb, byID, []secondaryindex.Index[Employee]{byEmail}, &secondaryindex.IntraOptions{Conflict: testbed.FastRetry(), Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := x.Insert(b.Ctx, emp(i, "F", "L", "e"+string(rune('0'+i))+"@contoso.com")); err != nil {
			t.Fatal(err)
		}
	}
	// Drift: employee 1's copy deleted (missing), an orphan copy, and employee 9 stored
	// around the package with an oversized FirstName (missing, and unwritable).
	if err := b.Raw.Delete(b.Ctx, "Sales", "email_e1@contoso.com", nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "email_ghost@contoso.com", Properties: map[string]any{"EmployeeId": "000099"}}); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"PartitionKey": "Sales", "RowKey": "empid_000009",
		"EmployeeId": "000009", "FirstName": "F", "LastName": "L", "Email": "e9#x@contoso.com"})
	if _, err := b.Direct.Tables.NewClient(b.Table).AddEntity(b.Ctx, body, nil); err != nil { // around the SDK's checks
		t.Fatal(err)
	}
	if err := x.StartRepair(b.Ctx, "Sales"); err != nil {
		t.Fatal(err)
	}
	w := b.Worker(q, x.Register)
	testbed.Drain(t, w)
	t.Logf("rows %q", b.rows(t, "Sales"))
	r, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatalf("worker %+v; Verify after the repair job: %v", w.Stats(), err)
	}
	t.Logf("worker %+v; after the repair job: missing %d orphan %d stale %d samples %+v", w.Stats(), r.Missing, r.Orphan, r.Stale, r.Samples)
	if r.Orphan != 0 || r.Missing > 0 {
		t.Fatalf("the repair job left %d orphan(s) and %d missing copies (only employee 9's is unwritable); poisoned %d", r.Orphan, r.Missing, w.Stats().Poisoned)
	}
}

// Attack on "duplicated and concurrent jobs are harmless": on an Inter over data that
// predates it (no copies at all) plus hand-made drift, a backfill job, two deliveries of
// a repair job and a verify job of the same partition run at once on one worker, the
// first transaction held at the proxy until the others have started. Nothing is
// poisoned and the partition ends clean.
func TestInterBackfillAndRepairJobsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	direct := driftInter(t, b, q) // 5 employees with copies, then drift
	for i := 6; i <= 40; i++ {    // employees stored around the index: no copy, no ref
		if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", i), Properties: map[string]any{
			"EmployeeId": fmt.Sprintf("%06d", i), "FirstName": "F", "LastName": "L", "Email": fmt.Sprintf("e%d@contoso.com", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.StartBackfill(b.Ctx, "Sales"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := x.StartRepair(b.Ctx, "Sales"); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.StartVerify(b.Ctx, "Sales"); err != nil {
		t.Fatal(err)
	}
	ps := b.Proxies.Table.PauseAt("first transaction", faultproxy.IsBatch, 1)
	w := b.worker(t, queue, x)
	done := make(chan error, 1)
	go func() { done <- w.Drain(b.Ctx) }()
	testbed.WaitHeld(t, ps)
	// The other jobs run meanwhile: release once they have sent requests of their own
	// while the first transaction is held.
	mark := len(b.Proxies.Table.Requests())
	testbed.WaitFor(t, "the other jobs' requests while the transaction is held", func() bool {
		return len(b.Proxies.Table.Requests()) >= mark+3
	})
	ps.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Poisoned != 0 {
		t.Fatalf("worker stats %+v", s)
	}
	mustClean(t, b.Ctx, direct, 40, "Sales")
}

// Attack on the Intra repair job racing a live writer: the repair's rewrite of a stale
// copy (employee 2's FirstName edited by hand) is held at the proxy; meanwhile the
// application changes employee 2's email. Released, the rewrite (conditional on the ETag
// Verify read) must not bring the old email's copy back.
func TestIntraRepairJobRacesLiveEmailChange(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	tb, err := repo.New[Employee](b.Clients.Tables, b.Table, &repo.Options{Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	x, err := secondaryindex.NewIntra(tb, byID, []secondaryindex.Index[Employee]{byEmail, byLast}, &secondaryindex.IntraOptions{Conflict: testbed.FastRetry(), Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	dtb, err := repo.New[Employee](b.Direct.Tables, b.Table, &repo.Options{Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	live, err := secondaryindex.NewIntra(dtb, byID, []secondaryindex.Index[Employee]{byEmail, byLast}, &secondaryindex.IntraOptions{Conflict: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := live.Insert(b.Ctx, emp(i, "F", "L", fmt.Sprintf("e%d@contoso.com", i))); err != nil {
			t.Fatal(err)
		}
	}
	c := b.row(t, "Sales", "email_e2@contoso.com")
	c.Properties["FirstName"] = "Tampered"
	if err := b.Raw.Upsert(b.Ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	if err := x.StartRepair(b.Ctx, "Sales"); err != nil {
		t.Fatal(err)
	}
	ps := b.Proxies.Table.PauseAt("repair rewrite", faultproxy.IsBatch, 1)
	w := b.Worker(q, x.Register)
	done := make(chan error, 1)
	go func() { done <- w.Drain(b.Ctx) }()
	testbed.WaitHeld(t, ps)
	cur := emp(2, "F", "L", "moved@contoso.com")
	if err := live.Update(b.Ctx, cur); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Poisoned != 0 {
		t.Fatalf("worker stats %+v", s)
	}
	if b.row(t, "Sales", "email_e2@contoso.com") != nil {
		t.Fatalf("the held repair brought back the old email's copy: rows %q", b.rows(t, "Sales"))
	}
	mustClean(t, b.Ctx, live, 3, "Sales")
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
