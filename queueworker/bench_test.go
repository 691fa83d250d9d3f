package queueworker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

// BenchmarkThroughput measures messages per second through a tiny handler: the worker at
// concurrency 1, 8 and 32 against a naive dequeue-one, handle, delete loop. Each run
// enqueues b.N messages (not timed) and times how long it takes to handle them all, the
// worker's final drain check included. Use a fixed count, e.g. -benchtime=1000x.
func BenchmarkThroughput(b *testing.B) {
	for _, c := range []int{1, 8, 32} {
		b.Run("worker/c="+itoa(c), func(b *testing.B) {
			bd := setup(b)
			var handled atomic.Int64
			reg := NewRegistry()
			MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
				handled.Add(1)
				return nil
			})
			cfg := bd.config(reg)
			cfg.Queue, cfg.Service = bd.direct, bd.dsvc
			cfg.Concurrency = c
			cfg.BatchSize = min(c, MaxBatchSize)
			w := bd.worker(cfg)
			bd.enqueue("job", "b", b.N)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			bd.drain(w, 10*time.Minute)
			elapsed := time.Since(start)
			b.StopTimer()
			if handled.Load() < int64(b.N) {
				b.Fatalf("handled %d of %d", handled.Load(), b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
		})
	}
	b.Run("naive", func(b *testing.B) {
		bd := setup(b)
		bd.enqueue("job", "b", b.N)
		ctx := context.Background()
		var handled int
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for handled < b.N {
			resp, err := bd.direct.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: ptr(int32(1)), VisibilityTimeout: ptr(int32(30))})
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range resp.Messages {
				if _, _, err := decodeEnvelope(*m.MessageText); err != nil { // the tiny handler
					b.Fatal(err)
				}
				handled++
				if _, err := bd.direct.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
}
