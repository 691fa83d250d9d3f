package keyspread_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
)

// A partition that takes 95 % of the writes is a hot partition, wherever its key sorts:
// repeated writes to the current highest (or lowest) key are not an append-only (or
// prepend-only) sequence. And the fix the advisor suggests must help: the same writes,
// with the hot partition spread as suggested, are no longer a hot spot.
func TestAdviseHotPartitionAtEitherEndIsNotMonotonic(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, hot string }{
		{"hot key sorts last", "zSales"},  // every write to it is a write to the current maximum
		{"hot key sorts first", "ASales"}, // ... to the current minimum
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			pks := make([]string, 4000)
			for i := range pks {
				pks[i] = c.hot
				if rng.IntN(100) < 5 {
					pks[i] = fmt.Sprintf("dept%02d", rng.IntN(50))
				}
			}
			rep, err := keyspread.AdviseKeys(pks, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Pattern != keyspread.HotPartition || rep.Hottest[0].PartitionKey != c.hot {
				t.Fatalf("a 95%%-hot partition reported as %v (append share %.2f, prepend share %.2f): %s", rep.Pattern, rep.AppendShare, rep.PrependShare, rep.Suggestion)
			}
			// Follow the advice: spread the hot partition over rep.Buckets buckets by row key.
			if !strings.Contains(rep.Suggestion, "KeyBy") || rep.Buckets < 2 {
				t.Fatalf("the advice does not spread the hot partition by row key: %d buckets, %q", rep.Buckets, rep.Suggestion)
			}
			b, err := keyspread.NewBuckets(rep.Buckets)
			if err != nil {
				t.Fatal(err)
			}
			spread := make([]string, len(pks))
			for i, pk := range pks {
				spread[i] = pk
				if pk == c.hot {
					spread[i] = b.KeyBy(pk, fmt.Sprintf("row%06d", i))
				}
			}
			after, err := keyspread.AdviseKeys(spread, nil)
			if err != nil {
				t.Fatal(err)
			}
			if after.Pattern != keyspread.Spread {
				t.Fatalf("after following the advice: %v, skew %.2f: %s", after.Pattern, after.Skew, after.Suggestion)
			}
		})
	}
}

// A tiny Target (any positive rate is valid) makes the suggested bucket count huge: the
// advisor caps it at MaxBuckets and returns, instead of doubling forever.
func TestAdviseTinyTargetReturns(t *testing.T) {
	t.Parallel()
	start := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	writes := func(yield func(keyspread.Write) bool) {
		for i := range 100 {
			if !yield(keyspread.Write{PartitionKey: "2014073118", Time: start.Add(time.Duration(i) * time.Millisecond)}) {
				return
			}
		}
	}
	for _, target := range []float64{1e-3, 1e-300, math.SmallestNonzeroFloat64} {
		done := make(chan keyspread.Report, 1)
		errc := make(chan error, 1)
		go func() {
			rep, err := keyspread.Advise(writes, &keyspread.AdviseOptions{Target: target})
			errc <- err
			done <- rep
		}()
		// An Advise that never returns hangs until go test -timeout, whose goroutine dump
		// shows where: a fixed deadline is one a loaded machine can miss.
		err := <-errc
		rep := <-done
		if err != nil {
			t.Fatalf("Target %v: %v", target, err)
		}
		if rep.Buckets != keyspread.MaxBuckets {
			t.Fatalf("Target %v: %d buckets, want the cap %d", target, rep.Buckets, keyspread.MaxBuckets)
		}
	}
}
