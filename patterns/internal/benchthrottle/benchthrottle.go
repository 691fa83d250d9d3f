// Package benchthrottle is the account access of the pattern packages' throttled
// benchmarks (benchcmp.RunThrottled): clients that go around the throughput model, for
// the untimed preparation of each operation, clients behind it, for the timed operation,
// and the model itself at the benchmarks' scaled targets. It lives under patterns (not
// the module's internal/) because it builds repo clients, and it imports no pattern, so
// that a pattern package's own tests can use it.
//
// It stands on internal/testenv, so the benchmark's TestMain must call testenv.Main.
package benchthrottle

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// Bed is one throttled benchmark's account access.
type Bed struct {
	// Direct reaches the account around the model: the untimed preparation runs on it.
	Direct *account.Clients
	// Proxied reaches the account through the model: the timed operation runs on it.
	Proxied *account.Clients
	// Model is the throughput model in front of the table service, at
	// benchcmp.ThrottledPartitionRate per partition and benchcmp.ThrottledAccountRate
	// per account; give it to benchcmp.RunThrottled.
	Model *faultproxy.Throttle
}

// New returns the bed of benchmark b: fault proxies in front of the test account
// (closed in b.Cleanup), the two sets of clients and the model. It fails b if the clients
// or the model cannot be made.
func New(b *testing.B) *Bed {
	b.Helper()
	ps := testenv.Proxies(b)
	direct, err := account.NewClients(testenv.ConnectionString(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	proxied, err := account.NewClients(ps.ConnectionString, nil)
	if err != nil {
		b.Fatal(err)
	}
	model, err := ps.Table.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: benchcmp.ThrottledPartitionRate, AccountRate: benchcmp.ThrottledAccountRate})
	if err != nil {
		b.Fatal(err)
	}
	return &Bed{Direct: direct, Proxied: proxied, Model: model}
}

// SeedTable creates a new table (deleted in b.Cleanup) and writes items to it on the
// direct clients, around the model, under b.Context(). It returns the table's name.
//
// Errors: the table client's (errs.ErrInvalidInput family) and BulkWrite's; it fails b
// if the table cannot be created.
func (e *Bed) SeedTable(b *testing.B, items []*codec.Entity) (string, error) {
	b.Helper()
	name := testenv.TableName(b)
	testenv.Table(b, name)
	t, err := repo.New[codec.Entity](e.Direct.Tables, name, nil)
	if err != nil {
		return "", err
	}
	return name, t.BulkWrite(b.Context(), items, nil)
}
