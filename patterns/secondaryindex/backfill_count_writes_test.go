package secondaryindex_test

import (
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Checkpoint.Written counts "those whose copies had to be written", also when a page
// stops at a failure. An Inter over two indexes backfills one entity: its email index's
// transaction lands and answers, then its last-name index's is refused (403, every
// time). The backfill fails, and Written counts the entity whose email copy it wrote.
func TestInterBackfillCountsAnEntityWrittenInOneIndexBeforeAnotherFailed(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	b.seedEmployeesIn(t, 1, func(int) string { return "Sales" })
	q, _ := b.Queue()
	x, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail, byLast},
		&secondaryindex.InterOptions{SafetyDelay: -1, Conflict: testbed.FastRetry(), Table: repo.Options{Retry: testbed.FastRetry()}})
	if err != nil {
		t.Fatal(err)
	}
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "refuse the last-name index", Action: faultproxy.Respond(http.StatusForbidden, "AuthorizationFailure"),
		Match: batchHolding("last_Sales")})
	cp, err := x.BackfillPartition(b.Ctx, "Sales", nil)
	if err == nil {
		t.Fatal("the backfill succeeded although the last-name index was refused")
	}
	if b.row(t, "email_Sales", interKey("employee000000@contoso.com", "000000")) == nil {
		t.Fatal("the email copy was not written (the test would prove nothing)")
	}
	if cp.Written != 1 {
		t.Errorf("backfill wrote the email copy of one entity, then failed (%v); Written = %d, want 1", err, cp.Written)
	}
}
