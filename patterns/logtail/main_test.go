package logtail_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Claim is the guide's expense claim: the employee is the partition, the log owns the RowKey.
type Claim struct {
	Employee    string  `table:",pk"`
	Key         string  `table:",rk"`
	ClaimID     string  `table:"ClaimID"`
	Amount      float64 `table:"Amount"`
	Description string  `table:"Description,omitempty"`
	ETag        string  `table:",etag"`
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
	b := &bed{ctx: t.Context(), name: testenv.TableName(t)}
	cs := testenv.ConnectionString(t)
	if proxied {
		ps := testenv.Proxies(t)
		cs, b.proxy = ps.ConnectionString, ps.Table
	}
	var err error
	if b.clients, err = account.NewClients(cs, nil); err != nil {
		t.Fatal(err)
	}
	testenv.Table(t, b.name) // created now, deleted by t.Cleanup
	return b
}

// fastRetry keeps retries short in tests that inject faults.
func fastRetry() *repo.Options {
	o := &repo.Options{}
	o.Retry.Delay, o.Retry.MinDelay, o.Retry.MaxDelay = 5*time.Millisecond, time.Millisecond, 50*time.Millisecond
	return o
}

func claims(t testing.TB, b *bed) *repo.Table[Claim] {
	t.Helper()
	tb, err := repo.New[Claim](b.clients.Tables, b.name, fastRetry())
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// steppingClock returns a clock that starts at start and moves by step at every call.
// It is safe for concurrent use.
func steppingClock(start time.Time, step time.Duration) func() time.Time {
	var mu sync.Mutex
	next := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now := next
		next = next.Add(step)
		return now
	}
}
