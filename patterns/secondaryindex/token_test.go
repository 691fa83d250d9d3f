package secondaryindex_test

import (
	"context"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

// Both index variants with Microsoft Entra ID tokens over HTTPS and no account key: the
// intra-partition index's transactions, and the inter-partition index's write, queue
// message and reconciliation by the worker.
func TestIndexesWithTokenAuth(t *testing.T) {
	t.Parallel()
	s := testenv.OAuthServer(t)
	cred := &tabletest.Credential{}
	clients, err := account.NewTokenClients(account.Endpoints{Table: s.TableURL, Queue: s.QueueURL}, cred,
		&repo.ClientOptions{Transport: s.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	name := testenv.TableName(t)

	intra, err := intraOn(clients.Tables, name+"A", byID, []secondaryindex.Index[Employee]{byEmail}, &repo.Options{Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := intra.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = clients.Tables.DeleteTable(context.Background(), name+"A", nil) })
	if err := intra.Insert(ctx, emp(1, "Ann", "Lee", "ann@contoso.com")); err != nil {
		t.Fatal(err)
	}
	if got, err := intra.Lookup(ctx, "Sales", "email", "ann@contoso.com"); err != nil || got.FirstName != "Ann" {
		t.Fatalf("intra lookup with a token: %+v %v", got, err)
	}

	qname := testenv.QueueName(t)
	q := clients.Queues.NewQueueClient(qname)
	if _, err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = q.Delete(context.Background(), nil) })
	qc, err := queueworker.NewClient(q, &queueworker.ClientOptions{Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	inter, err := secondaryindex.NewInter(clients.Tables, name+"B", qc, []secondaryindex.Index[Employee]{byEmail},
		&secondaryindex.InterOptions{SafetyDelay: -1, Table: repo.Options{Retry: testbed.FastRetry()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := inter.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inter.Table().DeleteTable(context.Background()) })
	if err := inter.Insert(ctx, iemp(2, "Bo", "Kim", "bo@contoso.com")); err != nil {
		t.Fatal(err)
	}
	reg := queueworker.NewRegistry()
	if err := inter.Register(reg); err != nil {
		t.Fatal(err)
	}
	w, err := queueworker.New(queueworker.Config{Queue: q, Service: clients.Queues, Registry: reg,
		MinPollInterval: 10 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond, Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	if got, err := inter.Lookup(ctx, "Sales", "email", "bo@contoso.com"); err != nil || got.EmployeeID != "000002" {
		t.Fatalf("inter lookup after reconciliation with a token: %+v %v", got, err)
	}
	if cred.Issued() == 0 {
		t.Fatal("no token issued")
	}
}
