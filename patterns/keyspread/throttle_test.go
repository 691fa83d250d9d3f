package keyspread_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The throughput model of these load tests: the published targets (2,000 entities/s per
// partition, 20,000 per account) scaled down a hundred times, so that Azurite on a shared
// 2-core machine (under the race detector, next to other packages' tests) can serve the
// account limit. The ratio of the two is the published one. Transactions carry
// loadTxSize entities, one partition's burst, so that each is admitted whole.
const loadTxSize = loadPartitionRate
const (
	loadPartitionRate = faultproxy.PartitionTarget / 100
	loadAccountRate   = faultproxy.AccountTarget / 100
)

// loadSteadySeconds is how many whole seconds at the limit each layout of a load test is
// measured over: a second in which the model refused requests had more offered than it
// admitted. Four seconds show a limit a layout holds (the first second, the buckets'
// initial burst, is never counted). make soak does not lengthen it: over a longer run the
// writers' backoffs grow with every refusal and both layouts fall below their limits,
// which measures the backoff, not the layouts (seen at 20 seconds: 13 and 107 entities/s).
const loadSteadySeconds = 4

// TestLoadSpreadVersusAppendOnly writes the entries of the guide's employee access log,
// with the same 32 writers sending entity group transactions of 20, in two layouts,
// through the throughput model: every entry of the hour in the hour's partition (the
// append-only layout: the partition the clock points at takes every write), and spread by
// Buckets(16).KeyBy(hour, RowKey). Each layout runs until the model has refused requests
// in loadSteadySeconds whole seconds (the append-only one would need 1,000 s for all
// 20,000 entries at one partition's rate); the model counts what it admitted each second.
// The spread layout must sustain close to the account limit, the append-only one at most
// one partition's limit.
func TestLoadSpreadVersusAppendOnly(t *testing.T) {
	const (
		n       = 20000
		writers = 32
		hour    = "2014-07-31T18"
	)
	buckets, err := keyspread.NewBuckets(16)
	if err != nil {
		t.Fatal(err)
	}
	rks := make([]string, n)
	for i := range rks {
		rks[i] = keys.InvertedTicksUnique(time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC).Add(time.Duration(i)*time.Millisecond), fmt.Sprintf("%06d", i))
	}
	layouts := []struct {
		name string
		pk   func(rk string) string
	}{
		{"append-only", func(string) string { return hour }},
		{"spread", func(rk string) string { return buckets.KeyBy(hour, rk) }},
	}
	rates := map[string]layoutRate{}
	for _, l := range layouts {
		items := make([]*Access, n)
		for i, rk := range rks {
			items[i] = &Access{Partition: l.pk(rk), RowKey: rk, Employee: fmt.Sprintf("%06d", i%37), Resource: "vpn", Granted: i%5 != 0}
		}
		rates[l.name] = runLayout(t, l.name, items, nil, writers)
	}
	checkLayouts(t, rates["append-only"], rates["spread"], writers)
}

// TestLoadHashPrefixVersusSequentialIDs is the same comparison for Tablestore's case:
// orders whose PartitionKey is a sequential order number (1,000 orders of 20 lines, the
// RowKey), written in order, against the same orders under HashPrefix(4). Consecutive
// numbers are different PartitionKeys, so the model is given range partitions (PartitionOf:
// keys that share their first four characters share a server, an assumption standing in
// for the service grouping neighbouring keys): sequential numbers all land in the last
// range, hash-prefixed ones everywhere.
func TestLoadHashPrefixVersusSequentialIDs(t *testing.T) {
	const (
		orders, lines = 1000, loadTxSize
		writers       = 32
	)
	hp, err := keyspread.NewHashPrefix(4)
	if err != nil {
		t.Fatal(err)
	}
	rangeOf := func(pk string) string { return pk[:min(len(pk), 4)] }
	rates := map[string]layoutRate{}
	for _, l := range []struct {
		name string
		pk   func(order string) string
	}{
		{"append-only", func(order string) string { return order }},
		{"spread", hp.Key},
	} {
		var items []*Access
		for o := range orders {
			order := fmt.Sprintf("%08d", 20140731+o)
			for line := range lines {
				items = append(items, &Access{Partition: l.pk(order), RowKey: fmt.Sprintf("%03d", line), Employee: order, Resource: "order", Granted: true})
			}
		}
		rates[l.name] = runLayout(t, l.name, items, rangeOf, writers)
	}
	checkLayouts(t, rates["append-only"], rates["spread"], writers)
}

// layoutRate is what the model admitted of one layout, in entities per second.
type layoutRate struct {
	// mean is over every whole second after the first: what the layout sustained,
	// the seconds its writers sat in backoff included. It is the rate a layout held to
	// one partition is judged by: it can only fall below the limit, never above.
	mean float64
	// atLimit is the median of the seconds in which the model also refused requests:
	// what the layout reached when more was offered than admitted. It is the rate a
	// layout that can use the account is judged by: a second in which a busy machine
	// starved the writers of the CPU does not move it.
	atLimit float64
}

// runLayout writes items through a fresh throughput model until the model has refused
// requests in loadSteadySeconds whole seconds after the first, and returns what it
// admitted. It waits on the model's progress, not on a window: a machine too busy to
// reach the limit only makes the run longer, and running out of items before that fails
// the test.
func runLayout(t *testing.T, name string, items []*Access, partitionOf func(string) string, writers int) layoutRate {
	t.Helper()
	tb, proxy := throttledTable(t)
	model, err := proxy.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: loadPartitionRate, AccountRate: loadAccountRate, PartitionOf: partitionOf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	model.Reset()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for len(saturated(model.Stats())) < loadSteadySeconds {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		cancel()
	}()
	written, err := writeInterleaved(ctx, tb, items, writers, loadTxSize)
	cancel()
	<-watched
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	st := model.Stats()
	secs := saturated(st)
	if len(secs) < loadSteadySeconds {
		t.Fatalf("%s: the model refused requests in %d whole seconds, want %d: the %d entities ran out before the load held the limit",
			name, len(secs), loadSteadySeconds, written)
	}
	var sum int64
	for _, c := range st.Seconds[1 : len(st.Seconds)-1] {
		sum += c.AdmittedEntities
	}
	rate := layoutRate{mean: float64(sum) / float64(len(st.Seconds)-2), atLimit: median(secs)}
	t.Logf("%s: %d entities written in %d s, %.0f entities/s sustained, %.0f in the %d seconds at the limit; model: %d admitted, %d refused in %d requests, %d partitions",
		name, written, len(st.Seconds), rate.mean, rate.atLimit, len(secs), st.Total.AdmittedEntities, st.Total.RefusedEntities, st.Total.RefusedRequests, len(st.Partitions))
	return rate
}

// saturated returns the entities the model admitted in each whole second after the first
// (second 0 holds the buckets' initial burst, the last one is still running) in which it
// also refused requests.
func saturated(st faultproxy.ThrottleStats) []float64 {
	var out []float64
	for i := 1; i < len(st.Seconds)-1; i++ {
		if c := st.Seconds[i]; c.RefusedRequests > 0 {
			out = append(out, float64(c.AdmittedEntities))
		}
	}
	return out
}

// median returns the middle of xs (the mean of the two middle ones for an even count):
// a second in which the writers were starved of the CPU does not move it.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// checkLayouts checks the rates of the two layouts against the model's limits: the
// append-only layout by what it sustained, the spread one by what it reached at the limit.
func checkLayouts(t *testing.T, appendOnlyRate, spreadRate layoutRate, writers int) {
	t.Helper()
	appendOnly, spread := appendOnlyRate.mean, spreadRate.atLimit
	// Over s seconds a bucket admits at most rate*s plus its burst (one second's worth):
	// a quarter more over the four seconds or more measured, and in any one second twice
	// its rate. The lower bound is loose: writers whose backoffs grew to seconds leave the
	// one partition idle at times.
	if appendOnly > loadPartitionRate*1.25 || appendOnly < 0.5*loadPartitionRate {
		t.Errorf("append-only sustained %.0f entities/s, want one partition's %d", appendOnly, loadPartitionRate)
	}
	if spread < 0.7*loadAccountRate || spread > loadAccountRate*2 {
		t.Errorf("spread reached %.0f entities/s at the limit, want close to the account's %d", spread, loadAccountRate)
	}
	ratio := spread / appendOnly
	t.Logf("spread / append-only = %.1f (model: partition %d/s, account %d/s, burst 1 s each; %d writers, transactions of %d)", ratio, loadPartitionRate, loadAccountRate, writers, loadTxSize)
	if ratio < 5 {
		t.Errorf("spread / append-only = %.1f, want at least 5 (the model allows %d)", ratio, loadAccountRate/loadPartitionRate)
	}
}

// throttledTable returns a table behind a fault proxy whose retries are the repo's
// defaults, what an application would run with.
func throttledTable(t *testing.T) (*repo.Table[Access], *faultproxy.Proxy) {
	t.Helper()
	b := testbed.New(t, &testbed.Options{Proxied: true, NoTable: true})
	ps := b.Proxies
	tb, err := repo.New[Access](b.Clients.Tables, b.Table, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Created and deleted through the proxy (the model does not judge table operations)
	// by a client that stays busy: an idle keep-alive connection Azurite closed after 5 s
	// would fail the cleanup's DELETE.
	if err := tb.CreateIfNotExists(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tb.DeleteTable(context.Background()) })
	return tb, ps.Table
}

// writeInterleaved inserts items in entity group transactions of up to txSize entities of one
// partition, taking the partitions in turn (so that concurrent transactions hit different
// partitions when there are several), with writers goroutines, until all are written or
// ctx ends. It returns how many entities were written; an error other than the throttling
// that outlasted the retries or ctx's ending fails the run.
func writeInterleaved(ctx context.Context, tb *repo.Table[Access], items []*Access, writers, txSize int) (int64, error) {
	var order []string
	byPK := map[string][]*Access{}
	for _, it := range items {
		if _, ok := byPK[it.Partition]; !ok {
			order = append(order, it.Partition)
		}
		byPK[it.Partition] = append(byPK[it.Partition], it)
	}
	var chunks [][]*Access
	for more := true; more; {
		more = false
		for _, pk := range order {
			rest := byPK[pk]
			if len(rest) == 0 {
				continue
			}
			k := min(len(rest), txSize)
			chunks = append(chunks, rest[:k])
			byPK[pk] = rest[k:]
			more = true
		}
	}
	var next, written atomic.Int64
	errc := make(chan error, writers)
	for range writers {
		go func() {
			for {
				c := next.Add(1) - 1
				if c >= int64(len(chunks)) || ctx.Err() != nil {
					errc <- nil
					return
				}
				actions := make([]repo.Action, len(chunks[c]))
				for i, it := range chunks[c] {
					actions[i] = tb.InsertAction(it)
				}
				if _, err := repo.Submit(ctx, actions...); err != nil {
					if ctx.Err() != nil || errors.Is(err, repo.ErrTransient) {
						// Cut by the window, or retries given up because the next
						// wait would end past it: not written, nothing wrong.
						continue
					}
					errc <- fmt.Errorf("transaction %d: %w", c, err)
					return
				}
				written.Add(int64(len(actions)))
			}
		}()
	}
	var errsOut []error
	for range writers {
		errsOut = append(errsOut, <-errc)
	}
	return written.Load(), errors.Join(errsOut...)
}
