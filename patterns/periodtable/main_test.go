package periodtable_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// SignIn is the guide's sign-in attempt: one partition per user, the attempt's time and id
// in the RowKey, and one table per day.
type SignIn struct {
	UserID      string    `table:",pk"`
	Attempt     string    `table:",rk"`
	AttemptTime time.Time `table:"AttemptTime"`
	Success     bool      `table:"Success"`
	ETag        string    `table:",etag"`
}

func signIn(user string, at time.Time, ok bool) *SignIn {
	return &SignIn{UserID: user, Attempt: at.UTC().Format("20060102T150405.0000000Z"), AttemptTime: at, Success: ok}
}

// bed is one test's account access: a unique table prefix, reached directly or through the
// fault proxy.
type bed struct {
	*testbed.Bed
	ctx     context.Context
	clients *account.Clients
	proxy   *faultproxy.Proxy // nil unless proxied
	prefix  string
}

// uniquePrefix returns a table-name prefix unique to this test: letters only, so that the
// stamp that follows is unambiguous.
func uniquePrefix(t testing.TB) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return "P" + strings.Map(func(r rune) rune { // digits -> letters
		if r >= '0' && r <= '9' {
			return 'g' + (r - '0')
		}
		return r
	}, h) + "x"
}

func setup(t testing.TB, proxied bool) *bed {
	t.Helper()
	tb := testbed.New(t, &testbed.Options{Proxied: proxied, NoTable: true})
	b := &bed{Bed: tb, ctx: tb.Ctx, clients: tb.Clients, proxy: tb.Proxy(), prefix: uniquePrefix(t)}
	// Delete whatever period tables the test left, directly (not through a proxy).
	raw := testenv.TableService(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		f := filter.And(filter.Ge("TableName", b.prefix), filter.Lt("TableName", b.prefix+"~")).String()
		p := raw.NewListTablesPager(&aztables.ListTablesOptions{Filter: &f})
		for p.More() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return
			}
			for _, tp := range page.Tables {
				_, _ = raw.DeleteTable(ctx, *tp.Name, nil)
			}
		}
	})
	return b
}

// tables returns the period tables of the test with fast retries.
func tables(t testing.TB, b *bed, period periodtable.Period, o *periodtable.Options) *periodtable.Tables[SignIn] {
	t.Helper()
	if o == nil {
		o = &periodtable.Options{}
	}
	o.Table.Retry = o.Table.Retry.Or(testbed.FastRetry())
	pt, err := periodtable.New[SignIn](b.clients.Tables, periodtable.Scheme{Prefix: b.prefix, Period: period}, "AttemptTime", o)
	if err != nil {
		t.Fatal(err)
	}
	return pt
}

func fixedClock(now time.Time) func() time.Time { return func() time.Time { return now } }
