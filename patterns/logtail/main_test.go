package logtail_test

import (
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
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

func setup(t testing.TB, proxied bool) *testbed.Bed {
	t.Helper()
	return testbed.New(t, &testbed.Options{Proxied: proxied})
}

func claims(t testing.TB, b *testbed.Bed) *repo.Table[Claim] {
	t.Helper()
	return testbed.NewTable[Claim](b, nil)
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
