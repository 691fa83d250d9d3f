package retry

import (
	"context"
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
)

func BenchmarkNextBackOff(b *testing.B) {
	bo := Policy{MaxRetries: 1 << 30}.NewBackOff()
	b.ReportAllocs()
	for b.Loop() {
		if bo.NextBackOff() < 0 {
			bo.Reset()
		}
	}
}

func BenchmarkIsTransient(b *testing.B) {
	err := responseError(b, http.StatusServiceUnavailable, "ServerBusy")
	b.ReportAllocs()
	for b.Loop() {
		_ = IsTransient(err)
	}
}

func BenchmarkDoSuccess(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = Do(ctx, Policy{}, testOp, func(ctx context.Context, attempt int) error { return nil })
	}
}

// BenchmarkDoVersusDirect measures what the retry wrapper costs a call that succeeds at
// once: Do with the default policy against calling the operation directly, alternated in
// batches in one run. ratio below 1: Do is slower (the figure is its overhead per call,
// against the milliseconds of a request).
func BenchmarkDoVersusDirect(b *testing.B) {
	ctx := context.Background()
	op := func(ctx context.Context, attempt int) error { return nil }
	benchcmp.Run(b, &benchcmp.Options{Batch: 256, Allocs: true},
		benchcmp.Side{Name: "do", Op: func(int) error { return Do(ctx, Policy{}, testOp, op) }},
		benchcmp.Side{Name: "direct", Op: func(int) error { return op(ctx, 1) }})
}
