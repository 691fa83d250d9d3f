package repo_test

import (
	"context"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Employee is the guide's employee entity: department as PartitionKey, employee id as RowKey.
type Employee struct {
	Department string    `table:",pk"`
	EmployeeID string    `table:",rk"`
	FirstName  string    `table:"FirstName"`
	LastName   string    `table:"LastName"`
	Age        int32     `table:"Age"`
	Email      string    `table:"Email,omitempty"`
	Salary     int64     `table:"Salary"`
	HireDate   time.Time `table:"HireDate,omitempty"`
	ETag       string    `table:",etag"`
	Timestamp  time.Time `table:",timestamp"`
}

func employee(dept, id string) *Employee {
	return &Employee{
		Department: dept, EmployeeID: id,
		FirstName: "Jun", LastName: "Jones", Age: 34, Email: "jonesj@contoso.com",
		Salary: 1 << 40, HireDate: time.Date(2012, 4, 1, 9, 30, 0, 123456700, time.UTC),
	}
}

// bed is one test's table, reached directly or through the fault proxy.
type bed struct {
	ctx     context.Context
	clients *account.Clients
	proxy   *faultproxy.Proxy // nil unless proxied
	name    string
}

func setup(t testing.TB, proxied bool) *bed {
	t.Helper()
	ctx := t.Context()
	b := &bed{ctx: ctx, name: testenv.TableName(t)}
	cs := testenv.ConnectionString(t)
	if proxied {
		ps := testenv.Proxies(t)
		cs, b.proxy = ps.ConnectionString, ps.Table
	}
	var err error
	b.clients, err = account.NewClients(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := testenv.TableService(t)
	if _, err := raw.CreateTable(ctx, b.name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = raw.DeleteTable(ctx, b.name, nil)
	})
	return b
}

func table[T any](t testing.TB, b *bed, opts *repo.Options) *repo.Table[T] {
	t.Helper()
	if opts == nil {
		opts = &repo.Options{}
	}
	if opts.Retry.Delay == 0 {
		opts.Retry.Delay, opts.Retry.MinDelay, opts.Retry.MaxDelay = 5*time.Millisecond, time.Millisecond, 50*time.Millisecond
	}
	tb, err := repo.New[T](b.clients.Tables, b.name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// requestsSince counts the requests the proxy saw after mark.
func requestsSince(p *faultproxy.Proxy, mark int) int { return p.Count() - mark }
