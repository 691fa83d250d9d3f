package secondaryindex_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
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

// bed is one test's bed, with the helpers of this package's tests. held records the
// messages enqueued invisible on the queue heldQueue (see safetyQueue).
type bed struct {
	*testbed.Bed
	held      *heldMessages
	heldQueue string
}

func setup(t *testing.T, proxied bool) *bed {
	t.Helper()
	return &bed{Bed: testbed.New(t, &testbed.Options{Proxied: proxied})}
}

func (b *bed) intra(t *testing.T, secondary ...secondaryindex.Index[Employee]) *secondaryindex.Intra[Employee] {
	t.Helper()
	return b.intraLogged(t, nil, nil, secondary...)
}

// intraLogged is intra with log as the table's logger (nil: none) and q as the queue of
// its jobs (nil: none).
func (b *bed) intraLogged(t *testing.T, log *zap.Logger, q *queueworker.Client, secondary ...secondaryindex.Index[Employee]) *secondaryindex.Intra[Employee] {
	t.Helper()
	tb, err := repo.New[Employee](b.Clients.Tables, b.Table, &repo.Options{Retry: testbed.FastRetry(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	x, err := secondaryindex.NewIntra(tb, byID, secondary, &secondaryindex.IntraOptions{Conflict: testbed.FastRetry(), Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// rows returns the RowKeys of partition pk, in order.
func (b *bed) rows(t *testing.T, pk string) []string {
	t.Helper()
	all, err := b.Raw.Collect(b.Ctx, repo.Query{Filter: filter.PartitionKey(pk)})
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
	e, err := b.Raw.Get(b.Ctx, pk, rk)
	if errors.Is(err, repo.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &e
}

func (b *bed) inter(t *testing.T, q *queueworker.Client, safety time.Duration, indexes ...secondaryindex.Index[Employee]) *secondaryindex.Inter[Employee] {
	t.Helper()
	x, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, q, indexes, &secondaryindex.InterOptions{
		SafetyDelay: safety, Conflict: testbed.FastRetry(), Table: repo.Options{Retry: testbed.FastRetry()},
	})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func (b *bed) worker(t *testing.T, queue string, x *secondaryindex.Inter[Employee]) *queueworker.Worker {
	t.Helper()
	q, err := queueworker.NewClient(b.Clients.Queues.NewQueueClient(queue), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.Worker(q, x.Register)
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
