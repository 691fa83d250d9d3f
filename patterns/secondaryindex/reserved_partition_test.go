package secondaryindex_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks "a primary PartitionKey that starts with an index's name and '_' is refused by
// every write, Notify and Reconcile" with two index sets over one table (InterOptions.Kind
// documents that two index sets of one table may share a queue): set A indexes email,
// set B indexes last names. B knows nothing of A's "email_" partitions and stores a
// primary in "email_Sales" under a compound RowKey built with keys.Join (the SDK's own
// compound keys). A's reconciliation of Sales/000777 then replaces it with a copy: a
// primary entity overwritten by another index set's copy, and A's lookups return it.
func TestInterTwoIndexSetsOneTable(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	a := b.inter(t, q, -1, byEmail)
	bset, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, q, []secondaryindex.Index[Employee]{byLast},
		&secondaryindex.InterOptions{Kind: "set-b", SafetyDelay: -1, Table: repo.Options{Retry: testbed.FastRetry()}})
	if err != nil {
		t.Fatal(err)
	}
	victim := iemp(500, "Vic", "Tim", "")
	victim.Department = "email_Sales"
	victim.RowKey = interKey("ann@contoso.com", "000777")
	if err := bset.Insert(b.Ctx, victim); errors.Is(err, repo.ErrInvalidInput) {
		return // held: set B refuses a primary in the form of any index partition
	} else if err != nil {
		t.Fatal(err)
	}
	ann := iemp(777, "Ann", "Other", "ann@contoso.com")
	if err := a.Insert(b.Ctx, ann); err != nil {
		t.Fatal(err)
	}
	if err := a.Reconcile(b.Ctx, "Sales", ann.RowKey); err != nil {
		t.Fatal(err)
	}
	got, err := bset.Table().Get(b.Ctx, victim.Department, victim.RowKey)
	if err != nil {
		t.Fatalf("set B's primary is gone: %v", err)
	}
	if got.FirstName != "Vic" {
		t.Fatalf("set B's primary email_Sales/%s now holds %+v: overwritten by set A's copy of Sales/000777", victim.RowKey, got)
	}
}

// The copies of partition P live in "<index>_P" of the primary's
// table, so a primary PartitionKey of that form is refused before anything is sent, by
// every write, Notify and Reconcile (a primary there would be overwritten by copies and
// removed with them). With the index in another table the same keys are fine.
func TestInterPrimaryPartitionInIndexKeySpaceIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail, byLast)
	e := iemp(803, "Cy", "Col", "cy@contoso.com")
	e.Department = "email_Sales"
	mark := b.Proxies.Table.Count() + b.Proxies.Queue.Count()
	calls := map[string]error{
		"Insert":    x.Insert(b.Ctx, e),
		"Upsert":    x.Upsert(b.Ctx, e),
		"Update":    x.Update(b.Ctx, e),
		"Delete":    x.Delete(b.Ctx, "last_Sales", "000803", nil),
		"Notify":    x.Notify(b.Ctx, "email_", "000803"),
		"Reconcile": x.Reconcile(b.Ctx, "email_Sales", "000803"),
	}
	for name, err := range calls {
		if !errors.Is(err, repo.ErrInvalidInput) || !strings.Contains(err.Error(), "Index.Table") {
			t.Errorf("%s of a primary in an index partition: %v, want ErrInvalidInput naming Index.Table", name, err)
		}
	}
	if n := b.Proxies.Table.Count() + b.Proxies.Queue.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for refused keys", n)
	}
	// A PartitionKey that only resembles the prefix is fine ("emails_" is not "email_").
	ok := iemp(804, "Di", "Col", "di@contoso.com")
	ok.Department = "emailSales"
	if err := x.Insert(b.Ctx, ok); err != nil {
		t.Fatal(err)
	}

	// The index in another table: the primary key space is free.
	other := testenv.TableName(t) + "x"
	testenv.Table(t, other)
	user := secondaryindex.Index[Employee]{Name: "user", Value: func(e *Employee) string { return e.Email }, Table: other}
	y := b.inter(t, q, -1, user)
	u := iemp(805, "Ed", "Col", "ed@contoso.com")
	u.Department = "user_42"
	if err := y.Insert(b.Ctx, u); err != nil {
		t.Fatalf("a user_ partition with the user index in another table: %v", err)
	}
	if err := y.Reconcile(b.Ctx, "user_42", u.RowKey); err != nil {
		t.Fatal(err)
	}
	got, err := y.Lookup(b.Ctx, "user_42", "user", "ed@contoso.com")
	if err != nil || got.EmployeeID != "000805" {
		t.Fatalf("lookup: %+v %v", got, err)
	}
}
