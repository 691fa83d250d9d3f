package wideentity_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/wideentity"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// bed is one test's table, reached directly and (if proxied) through the fault proxy.
type bed struct {
	ctx     context.Context
	direct  *account.Clients
	clients *account.Clients // through the proxy when proxied
	proxy   *faultproxy.Proxy
	name    string
}

func setup(t testing.TB, proxied bool) *bed {
	t.Helper()
	b := &bed{ctx: t.Context(), name: testenv.TableName(t)}
	var err error
	if b.direct, err = account.NewClients(testenv.ConnectionString(t), nil); err != nil {
		t.Fatal(err)
	}
	b.clients = b.direct
	if proxied {
		ps := testenv.Proxies(t)
		b.proxy = ps.Table
		if b.clients, err = account.NewClients(ps.ConnectionString, nil); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Table(t, b.name)
	return b
}

// store returns a Store on the bed's (possibly proxied) clients with fast retries; o may
// set anything else.
func store(t testing.TB, b *bed, o *wideentity.Options) *wideentity.Store {
	t.Helper()
	return storeOn(t, b.clients, b.name, o)
}

func storeOn(t testing.TB, c *account.Clients, name string, o *wideentity.Options) *wideentity.Store {
	t.Helper()
	if o == nil {
		o = &wideentity.Options{}
	}
	if o.Table.Retry == (retry.Policy{}) {
		o.Table.Retry = retry.Policy{Delay: 5 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond, MaxRetries: 20}
	}
	if o.TornRetry == (retry.Policy{}) {
		o.TornRetry = retry.Policy{Delay: 2 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetries: 5}
	}
	s, err := wideentity.New(c.Tables, name, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// year returns the guide's 365 daily message counts, D001 to D365, each day's count
// being day*seed mod 97, plus a name.
func year(seed int) map[string]any {
	p := make(map[string]any, 366)
	for d := 1; d <= 365; d++ {
		p[fmt.Sprintf("D%03d", d)] = int32(d * seed % 97)
	}
	p["Name"] = fmt.Sprintf("version %d", seed)
	return p
}
