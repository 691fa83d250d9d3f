package dataseries_test

import (
	"context"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/dataseries"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
)

func TestMain(m *testing.M) { testenv.Main(m) }

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
	testenv.Table(t, b.name)
	return b
}

// hours returns the guide's 24 hourly message counts, with fast transient retries.
func hours(t testing.TB, b *bed, o *dataseries.Options) *dataseries.Store[int64] {
	t.Helper()
	if o == nil {
		o = &dataseries.Options{}
	}
	if o.Table.Retry == (retry.Policy{}) {
		o.Table.Retry.Delay, o.Table.Retry.MinDelay, o.Table.Retry.MaxDelay = 5*time.Millisecond, time.Millisecond, 50*time.Millisecond
		o.Table.Retry.MaxRetries = 20
	}
	s, err := dataseries.New[int64](b.clients.Tables, b.name, dataseries.Layout{Points: 24, Prefix: "H"}, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
