package wideentity_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/wideentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func setup(t testing.TB, proxied bool) *testbed.Bed {
	t.Helper()
	return testbed.New(t, &testbed.Options{Proxied: proxied})
}

// store returns a Store on the bed's (possibly proxied) clients with fast retries; o may
// set anything else.
func store(t testing.TB, b *testbed.Bed, o *wideentity.Options) *wideentity.Store {
	t.Helper()
	return storeWith(t, b, nil, o)
}

// storeWith is store on a table built with topts (TrackWrites is always on).
func storeWith(t testing.TB, b *testbed.Bed, topts *repo.Options, o *wideentity.Options) *wideentity.Store {
	t.Helper()
	return newStore(t, b.Clients.Tables, b.Table, topts, o)
}

// storeDirect is store on the direct clients, bypassing the proxies.
func storeDirect(t testing.TB, b *testbed.Bed, o *wideentity.Options) *wideentity.Store {
	t.Helper()
	return newStore(t, b.Direct.Tables, b.Table, nil, o)
}

func newStore(t testing.TB, svc *aztables.ServiceClient, name string, topts *repo.Options, o *wideentity.Options) *wideentity.Store {
	t.Helper()
	to := repo.Options{}
	if topts != nil {
		to = *topts
	}
	to.TrackWrites = true
	to.Retry = to.Retry.Or(testbed.FastRetry())
	table, err := repo.New[codec.Entity](svc, name, &to)
	if err != nil {
		t.Fatal(err)
	}
	if o == nil {
		o = &wideentity.Options{}
	}
	if o.TornRetry == (retry.Policy{}) {
		o.TornRetry = retry.Policy{Delay: 2 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetries: 5}
	}
	s, err := wideentity.New(table, o)
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
