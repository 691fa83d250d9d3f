package keyspread_test

import (
	"context"
	"errors"
	"fmt"
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

// TestLoadSpreadVersusAppendOnly writes the same 20,000 entries of the guide's employee
// access log, with the same 32 writers sending entity group transactions of 20, in two
// layouts, through the throughput model: every entry of the hour in the hour's partition
// (the append-only layout: the partition the clock points at takes every write), and
// spread by Buckets(16).KeyBy(hour, RowKey). Each layout runs for the same bounded window
// (the append-only one would need 1,000 s for all 20,000 entries at one partition's rate);
// the model counts what it admitted each second. The spread layout must sustain close to
// the account limit, the append-only one at most one partition's limit.
func TestLoadSpreadVersusAppendOnly(t *testing.T) {
	const (
		n       = 20000
		writers = 32
		window  = 6 * time.Second
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
	rates := map[string]float64{}
	for _, l := range layouts {
		items := make([]*Access, n)
		for i, rk := range rks {
			items[i] = &Access{Partition: l.pk(rk), RowKey: rk, Employee: fmt.Sprintf("%06d", i%37), Resource: "vpn", Granted: i%5 != 0}
		}
		rates[l.name] = runLayout(t, l.name, items, nil, writers, window)
	}
	checkLayouts(t, rates["append-only"], rates["spread"], writers, window)
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
		window        = 6 * time.Second
	)
	hp, err := keyspread.NewHashPrefix(4)
	if err != nil {
		t.Fatal(err)
	}
	rangeOf := func(pk string) string { return pk[:min(len(pk), 4)] }
	rates := map[string]float64{}
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
		rates[l.name] = runLayout(t, l.name, items, rangeOf, writers, window)
	}
	checkLayouts(t, rates["append-only"], rates["spread"], writers, window)
}

// runLayout writes items through a fresh throughput model for window and returns the
// entities per second it admitted in steady state (seconds 1 to window-1: second 0 holds
// the buckets' initial burst, the last one may be cut short).
func runLayout(t *testing.T, name string, items []*Access, partitionOf func(string) string, writers int, window time.Duration) float64 {
	t.Helper()
	tb, proxy := throttledTable(t)
	model, err := proxy.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: loadPartitionRate, AccountRate: loadAccountRate, PartitionOf: partitionOf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), window)
	model.Reset()
	written, err := writeInterleaved(ctx, tb, items, writers, loadTxSize)
	cancel()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	st := model.Stats()
	rate := steadyRate(t, st, 1, int(window/time.Second)-1)
	t.Logf("%s: %d entities written in %v, steady %.0f entities/s; model: %d admitted, %d refused in %d requests, %d partitions",
		name, written, window, rate, st.Total.AdmittedEntities, st.Total.RefusedEntities, st.Total.RefusedRequests, len(st.Partitions))
	if st.Total.RefusedRequests == 0 {
		t.Errorf("%s: the model never throttled: the load did not reach the limit", name)
	}
	return rate
}

// checkLayouts checks the steady rates of the two layouts against the model's limits.
func checkLayouts(t *testing.T, appendOnly, spread float64, writers int, window time.Duration) {
	t.Helper()
	// Over s seconds a bucket admits at most rate*s plus its burst (one second's worth).
	// The lower bound is loose: writers whose backoffs grew to seconds leave the one
	// partition idle at times (the burst caps what an idle bucket saves).
	steadySeconds := float64(window/time.Second) - 2
	if appendOnly > loadPartitionRate*(1+1/steadySeconds) || appendOnly < 0.5*loadPartitionRate {
		t.Errorf("append-only sustained %.0f entities/s, want one partition's %d", appendOnly, loadPartitionRate)
	}
	if spread < 0.7*loadAccountRate || spread > loadAccountRate*(1+1/steadySeconds) {
		t.Errorf("spread sustained %.0f entities/s, want close to the account's %d", spread, loadAccountRate)
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

// steadyRate is the mean of the entities the model admitted per second over seconds
// [from, to).
func steadyRate(t *testing.T, st faultproxy.ThrottleStats, from, to int) float64 {
	t.Helper()
	if len(st.Seconds) < to {
		t.Fatalf("the model saw requests in %d seconds, want at least %d", len(st.Seconds), to)
	}
	var sum int64
	for _, c := range st.Seconds[from:to] {
		sum += c.AdmittedEntities
	}
	return float64(sum) / float64(to-from)
}
