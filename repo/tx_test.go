package repo_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// Department shares the partition with its employees (the Azure Table storage design guide "heterogeneous entity
// types"), so one transaction can change both.
type Department struct {
	Name          string `table:",pk"`
	ID            string `table:",rk"`
	Manager       string `table:"Manager"`
	EmployeeCount int32  `table:"EmployeeCount"`
	ETag          string `table:",etag"`
}

func TestTransactionAcrossEntityTypes(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	emps := table[Employee](t, b, nil)
	depts := table[Department](t, b, nil)
	ctx := b.ctx

	d := &Department{Name: "Sales", ID: "DEPARTMENT", Manager: "Jones", EmployeeCount: 0}
	if err := depts.Insert(ctx, d); err != nil {
		t.Fatal(err)
	}
	e1, e2 := employee("Sales", "000001"), employee("Sales", "000002")
	d.EmployeeCount = 2
	etags, err := repo.Submit(ctx, emps.InsertAction(e1), emps.InsertAction(e2), depts.UpdateAction(d, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(etags) != 3 || etags[0] == "" || e1.ETag != etags[0] || d.ETag != etags[2] {
		t.Fatalf("per-action ETags not returned: %q, e1 %q, d %q", etags, e1.ETag, d.ETag)
	}
	// The returned ETags are the stored ones: a conditional update with them succeeds.
	d.Manager = "Smith"
	if err := depts.Update(ctx, d, nil); err != nil {
		t.Fatalf("update with the transaction's ETag: %v", err)
	}

	// A failing action rolls back the whole transaction and is named by index and code.
	e3 := employee("Sales", "000003")
	stale := *d
	stale.ETag = etags[2]
	_, err = repo.Submit(ctx, emps.InsertAction(e3), emps.InsertAction(employee("Sales", "000001")), depts.UpdateAction(&stale, nil))
	var ae *repo.ActionError
	if !errors.As(err, &ae) {
		t.Fatalf("want an *ActionError, got %v", err)
	}
	if ae.Index != 1 || ae.RowKey != "000001" || ae.Code != "EntityAlreadyExists" || !errors.Is(err, repo.ErrAlreadyExists) {
		t.Fatalf("failed action: index %d key %q code %q (%v)", ae.Index, ae.RowKey, ae.Code, err)
	}
	if _, err := emps.Get(ctx, "Sales", "000003"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("action 0 of a failed transaction was applied: %v", err)
	}
	_, err = repo.Submit(ctx, emps.InsertAction(e3), depts.UpdateAction(&stale, nil))
	if !errors.As(err, &ae) || ae.Index != 1 || !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("stale ETag in a transaction: %v", err)
	}
	// An update action of a missing entity fails; it is not an upsert in disguise.
	ghost := &Department{Name: "Sales", ID: "GHOST"}
	_, err = repo.Submit(ctx, depts.UpdateAction(ghost, &repo.UpdateOptions{Unconditional: true}))
	if !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("update action of a missing entity: %v, want ErrNotFound", err)
	}
	all, err := emps.Collect(ctx, repo.Query{Filter: filter.PartitionKey("Sales")})
	if err != nil || len(all) != 3 { // 2 employees + the department row (decoded as Employee)
		t.Fatalf("partition holds %d rows, %v", len(all), err)
	}
}

// Transactions that the service would refuse, or that would not be atomic, are refused
// before any request, and never silently split.
func TestTransactionLimitsRefusedWithoutRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	emps := table[Employee](t, b, nil)
	other := b.clients.Tables
	otherTable, err := repo.New[Employee](other, b.name+"x", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := b.ctx
	mark := b.proxy.Count()

	many := make([]repo.Action, 101)
	for i := range many {
		many[i] = emps.InsertAction(employee("P", fmt.Sprintf("%03d", i)))
	}
	bigEntity := func(i int) *Employee {
		e := employee("P", fmt.Sprintf("%03d", i))
		e.FirstName = strings.Repeat("x", 30000) // 60 KB as UTF-16 (the limit's unit), 30 KB of JSON
		e.LastName = strings.Repeat("y", 30000)
		return e
	}
	large := make([]repo.Action, 75) // 75 x ~60 KB of JSON: over 4 MiB
	for i := range large {
		large[i] = emps.InsertAction(bigEntity(i))
	}
	cases := map[string][]repo.Action{
		"empty":            nil,
		"101 actions":      many,
		"over 4 MiB":       large,
		"two partitions":   {emps.InsertAction(employee("P", "1")), emps.InsertAction(employee("Q", "2"))},
		"same entity":      {emps.InsertAction(employee("P", "1")), emps.DeleteAction("P", "1", nil)},
		"two tables":       {emps.InsertAction(employee("P", "1")), otherTable.InsertAction(employee("P", "2"))},
		"invalid property": {emps.InsertAction(employee("P", "1")), emps.InsertAction(employee("P", "bad/key"))},
	}
	// Table names are case-insensitive, but a transaction covers one table as spelled.
	upper, err := repo.New[Employee](other, strings.ToUpper(b.name), nil)
	if err != nil {
		t.Fatal(err)
	}
	cases["two spellings"] = []repo.Action{emps.InsertAction(employee("P", "1")), upper.InsertAction(employee("P", "2"))}
	for name, actions := range cases {
		_, err := repo.Submit(ctx, actions...)
		var ie *repo.InvalidInputError
		if !errors.As(err, &ie) || ie.Field != "transaction" {
			t.Errorf("%s: got %v, want an *InvalidInputError on the transaction", name, err)
		}
		// CheckTransaction is Submit's own check: the same refusal, nothing sent.
		if cerr := repo.CheckTransaction(actions...); cerr == nil || err == nil || cerr.Error() != err.Error() {
			t.Errorf("%s: CheckTransaction %v, Submit %v", name, cerr, err)
		}
	}
	if n := requestsSince(b.proxy, mark); n != 0 {
		t.Fatalf("%d requests sent for refused transactions", n)
	}
	// 100 actions is the limit, not over it.
	if err := repo.CheckTransaction(many[:100]...); err != nil {
		t.Fatalf("100 actions checked: %v", err)
	}
	if _, err := repo.Submit(ctx, many[:100]...); err != nil {
		t.Fatalf("100 actions: %v", err)
	}
}

func TestBulkWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	emps := table[Employee](t, b, nil)
	ctx := b.ctx
	var items []*Employee
	for p := 0; p < 5; p++ {
		for i := 0; i < 230; i++ {
			items = append(items, employee(fmt.Sprintf("D%d", p), fmt.Sprintf("%04d", i)))
		}
	}
	if err := emps.BulkWrite(ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range items {
		if e.ETag == "" {
			t.Fatalf("%s/%s has no ETag after the bulk write", e.Department, e.EmployeeID)
		}
	}
	// Insert mode: the existing entities fail in their own slots, the new ones are written.
	again := []*Employee{employee("D0", "0001"), employee("D0", "9999"), employee("D1", "0002"), employee("D9", "0001"), employee("D9", "bad#key")}
	err := emps.BulkWrite(ctx, again, &repo.BulkOptions{Mode: repo.BulkInsert})
	var be *repo.BulkError
	if !errors.As(err, &be) || be.Failed != 3 {
		t.Fatalf("bulk insert: %v", err)
	}
	if !errors.Is(be.Errors[0], repo.ErrAlreadyExists) || be.Errors[1] != nil || !errors.Is(be.Errors[2], repo.ErrAlreadyExists) || be.Errors[3] != nil || !errors.Is(be.Errors[4], repo.ErrInvalidInput) {
		t.Fatalf("per-entity results: %v", be.Errors)
	}
	n := 0
	for _, err := range emps.Query(ctx, repo.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 5*230+2 {
		t.Fatalf("table holds %d entities, want %d", n, 5*230+2)
	}
}

// Real Azure refuses to recreate a table name for 40 s and more after a delete; the proxy
// plays that. CreateIfNotExists waits it out within its bound, then gives up with a typed error.
func TestCreateWaitsOutTableBeingDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := b.ctx
	emps := table[Employee](t, b, &repo.Options{CreateWait: 10 * time.Second})
	b.proxy.EmulateTableBeingDeleted(200 * time.Millisecond)
	if err := emps.DeleteTable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := emps.CreateIfNotExists(ctx); err != nil {
		t.Fatalf("create after delete: %v", err)
	}
	if ok, err := emps.Exists(ctx); err != nil || !ok {
		t.Fatalf("exists after create: %v %v", ok, err)
	}
	if err := emps.CreateIfNotExists(ctx); err != nil {
		t.Fatalf("create of an existing table: %v", err)
	}

	short := table[Employee](t, b, &repo.Options{CreateWait: 50 * time.Millisecond})
	b.proxy.EmulateTableBeingDeleted(time.Minute)
	if err := short.DeleteTable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := short.CreateIfNotExists(ctx); !errors.Is(err, repo.ErrTableBeingDeleted) {
		t.Fatalf("create while being deleted: %v, want ErrTableBeingDeleted", err)
	}
	if ok, err := short.Exists(ctx); err != nil || ok {
		t.Fatalf("exists of a deleted table: %v %v", ok, err)
	}
}

// CreateWait -1 gives up on TableBeingDeleted at once, but still retries transient failures.
func TestCreateWithoutWaitStillRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	emps := table[Employee](t, b, &repo.Options{CreateWait: -1})
	if err := emps.DeleteTable(b.ctx); err != nil {
		t.Fatal(err)
	}
	b.proxy.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsCreateTable, Times: 1, Action: faultproxy.Respond(503, "ServerBusy")})
	if err := emps.CreateIfNotExists(b.ctx); err != nil {
		t.Fatalf("create after one 503: %v", err)
	}
	if n := b.proxy.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Fired == "busy" }); n != 1 {
		t.Fatalf("the 503 fired %d times", n)
	}
	b.proxy.EmulateTableBeingDeleted(time.Minute)
	if err := emps.DeleteTable(b.ctx); err != nil {
		t.Fatal(err)
	}
	mark := b.proxy.Count()
	if err := emps.CreateIfNotExists(b.ctx); !errors.Is(err, repo.ErrTableBeingDeleted) {
		t.Fatalf("create while being deleted: %v", err)
	}
	if n := requestsSince(b.proxy, mark); n != 1 {
		t.Fatalf("%d create requests with CreateWait -1, want 1", n)
	}
}
