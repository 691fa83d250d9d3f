package largeentity_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// sweepQueue creates a queue and returns its client and a queueworker client on it.
func sweepQueue(t *testing.T) (*azqueue.QueueClient, *azqueue.ServiceClient, *queueworker.Client) {
	t.Helper()
	qb := testbed.New(t, &testbed.Options{NoTable: true})
	c, name := qb.Queue()
	return qb.Direct.Queues.NewQueueClient(name), qb.Direct.Queues, c
}

func approxMessages(t *testing.T, q *azqueue.QueueClient) int32 {
	t.Helper()
	p, err := q.GetProperties(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return *p.ApproximateMessagesCount
}

// A write that dies after its upload has already left the message that cleans up after
// it; the handler is idempotent, waits for the grace period, and ignores other Stores.
func TestSweepMessageAfterCrash(t *testing.T) {
	t.Parallel()
	q, _, qc := sweepQueue(t)
	b := setup(t, false, &largeentity.Options{Sweeps: qc})
	if err := b.store.Insert(b.ctx, employee("000123", photo(40, 30<<10))); err != nil {
		t.Fatal(err)
	}
	if n := approxMessages(t, q); n != 1 {
		t.Fatalf("%d messages after an insert with a blob, want 1", n)
	}
	largeentity.CrashAfter(b.store, largeentity.StepUploaded)
	e := employee("000123", photo(41, 30<<10))
	if err := b.store.Upsert(b.ctx, e); !errors.Is(err, largeentity.ErrCrash) {
		t.Fatal(err)
	}
	largeentity.CrashAfter(b.store, "")
	if n := approxMessages(t, q); n != 2 {
		t.Fatalf("%d messages after the crash, want 2 (the message goes before the upload)", n)
	}

	msg := &queueworker.Message[largeentity.SweepMessage]{ID: "m1", Kind: b.store.Kind(),
		Payload: largeentity.SweepMessage{Prefix: b.store.Prefix(), PartitionKey: "Sales", RowKey: "000123"}}
	// Too early: the orphan is younger than the grace period, so the message waits.
	var snooze *queueworker.SnoozeError
	if err := b.store.HandleSweep(b.ctx, msg); !errors.As(err, &snooze) || snooze.Duration < largeentity.DefaultSweepGrace-time.Minute {
		t.Fatalf("early delivery: %v, want a snooze of about the grace period", err)
	}
	if n := len(b.blobs()); n != 2 {
		t.Fatalf("an early delivery deleted blobs: %d left", n)
	}
	// After the grace period: the orphan goes, the referenced blob stays. Twice is once.
	largeentity.ShiftClock(b.store, 2*largeentity.DefaultSweepGrace)
	for range 2 {
		if err := b.store.HandleSweep(b.ctx, msg); err != nil {
			t.Fatal(err)
		}
		if all, ref := b.blobs(), b.referenced("Sales", "000123"); !equalStrings(all, ref) || len(ref) != 1 {
			t.Fatalf("container holds %q, the entity references %q", all, ref)
		}
	}
	other := *msg
	other.Payload.Prefix = "someone-else"
	var cancel *queueworker.CancelError
	if err := b.store.HandleSweep(b.ctx, &other); !errors.As(err, &cancel) {
		t.Fatalf("message of another store: %v", err)
	}
	bad := *msg
	bad.Payload.PartitionKey = ""
	if err := b.store.HandleSweep(b.ctx, &bad); !errors.As(err, &cancel) {
		t.Fatalf("message with invalid keys: %v", err)
	}
	// Delete enqueues before it deletes.
	if err := b.store.Delete(b.ctx, "Sales", "000123", ""); err != nil {
		t.Fatal(err)
	}
	if n := approxMessages(t, q); n != 3 {
		t.Fatalf("%d messages after the delete, want 3", n)
	}
}

// The whole loop with a real worker: the orphan of a crashed write disappears once its
// message comes due, without any full sweep.
func TestSweepWorkerCleansUp(t *testing.T) {
	t.Parallel()
	q, svc, qc := sweepQueue(t)
	b := setup(t, false, &largeentity.Options{Sweeps: qc, MaxWriteTime: time.Second, SweepGrace: 2 * time.Second})
	if err := b.store.Insert(b.ctx, employee("000123", photo(42, 30<<10))); err != nil {
		t.Fatal(err)
	}
	largeentity.CrashAfter(b.store, largeentity.StepUploaded)
	if err := b.store.Upsert(b.ctx, employee("000123", photo(43, 30<<10))); !errors.Is(err, largeentity.ErrCrash) {
		t.Fatal(err)
	}
	largeentity.CrashAfter(b.store, "")
	if n := len(b.blobs()); n != 2 {
		t.Fatalf("%d blobs before the worker runs", n)
	}
	reg := queueworker.NewRegistry()
	if err := b.store.Register(reg); err != nil {
		t.Fatal(err)
	}
	w, err := queueworker.New(queueworker.Config{Queue: q, Service: svc, Registry: reg, Retry: fast,
		MinPollInterval: 50 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := w.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if all, ref := b.blobs(), b.referenced("Sales", "000123"); !equalStrings(all, ref) || len(ref) != 1 {
		t.Fatalf("after the worker the container holds %q, the entity references %q", all, ref)
	}
	if s := w.Stats(); s.Processed != 2 || s.Poisoned != 0 {
		t.Fatalf("worker stats %+v", s)
	}
	mustEqual(t, "photo", b.consistent("Sales", "000123"), photo(42, 30<<10))
}
