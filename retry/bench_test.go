package retry

import (
	"context"
	"net/http"
	"testing"
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
