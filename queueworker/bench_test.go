package queueworker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// benchBatch is how many messages one operation of each side handles.
const benchBatch = 100

// benchBed is setup's queue with clients whose requests are counted (the one place this
// file builds clients).
func benchBed(b *testing.B) (*bundle, *azqueue.ServiceClient, *azqueue.QueueClient, *benchcmp.Counter) {
	b.Helper()
	bd := setup(b)
	ctr := benchcmp.NewCounter()
	svc, err := azqueue.NewServiceClientFromConnectionString(testenv.ConnectionString(b), &azqueue.ClientOptions{ClientOptions: policy.ClientOptions{Transport: ctr, Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		b.Fatal(err)
	}
	return bd, svc, svc.NewQueueClient(bd.name), ctr
}

// BenchmarkThroughput measures messages per second through a tiny handler: the worker at
// concurrency 1, 8 and 32, each against a naive dequeue-one, handle, delete loop,
// alternated operation by operation in one run (benchcmp) on the same queue. One
// operation handles 100 messages, enqueued beforehand (not timed); the worker's time
// includes its final drain check. ratio = naive time / worker time; msgs/s per side.
//
//	go test -run '^$' -bench Throughput -benchtime=3x ./queueworker/
func BenchmarkThroughput(b *testing.B) {
	for _, c := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			bd, svc, q, ctr := benchBed(b)
			var handled atomic.Int64
			reg := NewRegistry()
			MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
				handled.Add(1)
				return nil
			})
			enqueue := func(i int) error {
				bd.enqueue("job", fmt.Sprintf("b%d", i), benchBatch)
				return nil
			}
			benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count, Items: benchBatch, Unit: "msgs"},
				benchcmp.Side{Name: "worker", Prepare: enqueue, Op: func(int) error {
					cfg := bd.config(reg)
					cfg.Queue, cfg.Service = q, svc
					cfg.Concurrency = c
					cfg.BatchSize = min(c, MaxBatchSize)
					w := bd.worker(cfg)
					before := handled.Load()
					bd.drain(w)
					return benchcmp.Check("messages handled", handled.Load()-before, benchBatch)
				}},
				benchcmp.Side{Name: "naive", Prepare: enqueue, Op: func(int) error {
					return naiveLoop(q, benchBatch)
				}})
		})
	}
}

// naiveLoop handles n messages one at a time: dequeue one, decode it (the tiny handler),
// delete it.
func naiveLoop(q *azqueue.QueueClient, n int) error {
	ctx := context.Background()
	for handled := 0; handled < n; {
		resp, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: ptr(int32(1)), VisibilityTimeout: ptr(int32(30))})
		if err != nil {
			return err
		}
		for _, m := range resp.Messages {
			if _, _, err := decodeEnvelope(*m.MessageText); err != nil {
				return err
			}
			handled++
			if _, err := q.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil); err != nil {
				return err
			}
		}
	}
	return nil
}
