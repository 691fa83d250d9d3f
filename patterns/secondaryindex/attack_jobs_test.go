package secondaryindex_test

import (
	"encoding/json"
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
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attack on the verify job's promise (an entity with a value and no copy is reported
// Missing): a primary stored around the package (data older than the index) in a
// partition whose index partition "email_<pk>" would break the 1 KiB key limit can have
// no copy. The job's report line must not read as a clean partition: either the entity
// is counted as drift or the job fails; a report with entities and drift 0 is a false
// "verified".
func TestAttackInterVerifyJobLongPartitionReadsClean(t *testing.T) {
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
func TestAttackIntraVerifyJobUnindexableValueReadsClean(t *testing.T) {
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
// can hold. Verify skips it (wantKey returns "" for "can have none"), so the verify job
// reports the partition clean.
func TestAttackInterVerifyJobUnindexableValueReadsClean(t *testing.T) {
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

// Attack on the repair job ("repair fixes the drift; an entity whose value cannot be
// indexed is left and reported"): one primary copy stored around the package with an
// email no key can hold ('#'; a property over 64 KiB is refused even by Azurite) cannot
// be rewritten. The repair job must still fix the rest of the partition (here an orphan copy
// and another entity's missing copy), not abandon the partition into the poison queue on
// every delivery.
func TestAttackIntraRepairJobOneBadEntityAbandonsPartition(t *testing.T) {
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
func TestAttackInterBackfillAndRepairJobsAtOnce(t *testing.T) {
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
func TestAttackIntraRepairJobRacesLiveEmailChange(t *testing.T) {
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
