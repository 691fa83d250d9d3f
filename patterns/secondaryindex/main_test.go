package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Employee is the guide's employee: department as PartitionKey; the RowKey is owned by the
// index (Intra) or is the employee id (Inter).
type Employee struct {
	Department string `table:",pk"`
	RowKey     string `table:",rk"`
	EmployeeID string `table:"EmployeeId"`
	FirstName  string `table:"FirstName"`
	LastName   string `table:"LastName"`
	Age        int32  `table:"Age"`
	Email      string `table:"Email,omitempty"`
	ETag       string `table:",etag"`
}

func emp(id int, first, last, email string) *Employee {
	return &Employee{Department: "Sales", EmployeeID: fmt.Sprintf("%06d", id), FirstName: first, LastName: last, Age: int32(20 + id%40), Email: email}
}

var (
	byID    = secondaryindex.Index[Employee]{Name: "empid", Value: func(e *Employee) string { return e.EmployeeID }}
	byEmail = secondaryindex.Index[Employee]{Name: "email", Value: func(e *Employee) string { return e.Email },
		Properties: []string{"EmployeeId", "FirstName", "LastName", "Email"}}
	byLast = secondaryindex.Index[Employee]{Name: "last", Value: func(e *Employee) string { return e.LastName }, AllowDuplicates: true}
)

func fastRetry() retry.Policy {
	return retry.Policy{Delay: 5 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond, MaxRetries: 30, MaxElapsed: time.Minute}
}

// bed is one test's account access, direct or through fault proxies, and a fresh table.
type bed struct {
	ctx     context.Context
	clients *account.Clients
	proxies *testenv.ProxySet // nil unless proxied
	table   string
	raw     *repo.Table[codec.Entity] // every row of the table, bypassing the pattern
}

func setup(t *testing.T, proxied bool) *bed {
	t.Helper()
	b := &bed{ctx: t.Context(), table: testenv.TableName(t)}
	cs := testenv.ConnectionString(t)
	if proxied {
		b.proxies = testenv.Proxies(t)
		cs = b.proxies.ConnectionString
	}
	var err error
	if b.clients, err = account.NewClients(cs, nil); err != nil {
		t.Fatal(err)
	}
	testenv.Table(t, b.table)
	direct, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.raw, err = repo.New[codec.Entity](direct.Tables, b.table, nil); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *bed) intra(t *testing.T, secondary ...secondaryindex.Index[Employee]) *secondaryindex.Intra[Employee] {
	t.Helper()
	tb, err := repo.New[Employee](b.clients.Tables, b.table, &repo.Options{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	x, err := secondaryindex.NewIntra(tb, byID, secondary, &secondaryindex.IntraOptions{Conflict: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// rows returns the RowKeys of partition pk, in order.
func (b *bed) rows(t *testing.T, pk string) []string {
	t.Helper()
	all, err := b.raw.Collect(b.ctx, repo.Query{Filter: filter.PartitionKey(pk)})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(all))
	for i, e := range all {
		out[i] = e.RowKey
	}
	return out
}

func (b *bed) row(t *testing.T, pk, rk string) *codec.Entity {
	t.Helper()
	e, err := b.raw.Get(b.ctx, pk, rk)
	if errors.Is(err, repo.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &e
}

func (b *bed) queue(t *testing.T) (*queueworker.Client, string) {
	t.Helper()
	name := testenv.QueueName(t)
	q := b.clients.Queues.NewQueueClient(name)
	if _, err := q.Create(b.ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = q.Delete(ctx, nil)
		_, _ = b.clients.Queues.NewQueueClient(name+queueworker.PoisonSuffix).Delete(ctx, nil)
	})
	c, err := queueworker.NewClient(q, &queueworker.ClientOptions{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	return c, name
}

func (b *bed) inter(t *testing.T, q *queueworker.Client, safety time.Duration, indexes ...secondaryindex.Index[Employee]) *secondaryindex.Inter[Employee] {
	t.Helper()
	x, err := secondaryindex.NewInter(b.clients.Tables, b.table, q, indexes, &secondaryindex.InterOptions{
		SafetyDelay: safety, Conflict: fastRetry(), Table: repo.Options{Retry: fastRetry()},
	})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func (b *bed) worker(t *testing.T, queue string, x *secondaryindex.Inter[Employee]) *queueworker.Worker {
	t.Helper()
	reg := queueworker.NewRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	w, err := queueworker.New(queueworker.Config{
		Queue: b.clients.Queues.NewQueueClient(queue), Service: b.clients.Queues, Registry: reg,
		VisibilityTimeout: 20 * time.Second, MinPollInterval: 10 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond,
		Retry: fastRetry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func drain(t *testing.T, w *queueworker.Worker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := w.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
}

func collect[T any](t *testing.T, seq func(func(T, error) bool)) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func ids(es []Employee) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.EmployeeID
	}
	return strings.Join(s, ",")
}

func interKey(value, rk string) string { return keys.Join(value, rk) }

// requestsTo counts the proxy's requests since mark.
func requestsTo(p *faultproxy.Proxy, mark int) int { return p.Count() - mark }

// intraOn builds an Intra over table name of svc, with ropts for the table and its retry
// policy as the conflict policy.
func intraOn[T any](svc *aztables.ServiceClient, name string, primary secondaryindex.Index[T], secondary []secondaryindex.Index[T], ropts *repo.Options) (*secondaryindex.Intra[T], error) {
	tb, err := repo.New[T](svc, name, ropts)
	if err != nil {
		return nil, err
	}
	var o *secondaryindex.IntraOptions
	if ropts != nil {
		o = &secondaryindex.IntraOptions{Conflict: ropts.Retry}
	}
	return secondaryindex.NewIntra(tb, primary, secondary, o)
}
