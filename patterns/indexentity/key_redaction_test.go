package indexentity

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A value's index entities live in the partition "idx!<name>!<value>": a retried
// transaction of a TableStore logs neither that partition nor the value, and the error
// of a refused one does not name it.
func TestTableStoreNeverLogsOrReturnsTheValue(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	core, logs := observer.New(zap.WarnLevel)
	policy := fast
	policy.Logger = zap.New(core)
	s := must(NewTableStore(must(repo.New[codec.Entity](b.Clients.Tables, b.Table, &repo.Options{Retry: policy, Logger: zap.New(core)})), "LastName", nil))
	b.tableProxy().AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.Respond(503, "ServerBusy")})
	if err := s.Add(b.Ctx, "Hiddenvalue", Key{PartitionKey: "Sales", RowKey: "000001"}); err != nil {
		t.Fatal(err)
	}
	retried := logs.FilterMessage("retrying").All()
	if len(retried) == 0 || b.tableProxy().Fired("busy") != 1 {
		t.Fatal("the refused transaction was not retried: the test proves nothing")
	}
	for _, e := range retried {
		if m := fmt.Sprint(e.ContextMap()); strings.Contains(m, "Hiddenvalue") {
			t.Fatalf("a retry log entry names the value: %s", m)
		}
	}
	b.tableProxy().AddRule(faultproxy.Rule{Name: "refused", Match: faultproxy.IsBatch, Action: faultproxy.Respond(403, "AuthorizationFailure")})
	err := s.Add(b.Ctx, "Refusedvalue", Key{PartitionKey: "Sales", RowKey: "000002"})
	var re *repo.Error
	if !errors.As(err, &re) || re.StatusCode != 403 {
		t.Fatalf("the refused transaction: %v, want a *repo.Error with status 403", err)
	}
	if strings.Contains(err.Error(), "Refusedvalue") {
		t.Fatalf("the error names the value: %v", err)
	}
}
