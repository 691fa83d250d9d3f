package largeentity_test

import (
	"encoding/base64"
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
	if err := b.store.Delete(b.ctx, "Sales", "000123", nil); err != nil {
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
	testbed.Drain(t, w) // as long as the worker makes progress: the snoozed sweep comes due
	if all, ref := b.blobs(), b.referenced("Sales", "000123"); !equalStrings(all, ref) || len(ref) != 1 {
		t.Fatalf("after the worker the container holds %q, the entity references %q", all, ref)
	}
	if s := w.Stats(); s.Processed != 2 || s.Poisoned != 0 {
		t.Fatalf("worker stats %+v", s)
	}
	mustEqual(t, "photo", b.consistent("Sales", "000123"), photo(42, 30<<10))
}

// Blob metadata is untrusted too: a blob whose metadata was edited to name another entity
// (one that does not reference it, or does not exist) is not judged by that entity, so
// the sweeper never deletes a blob that its own entity references.
func TestSweeperIgnoresMetadataNamingAnotherEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	pic := photo(48, 40<<10)
	e := employee("000123", pic)
	if err := b.store.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	forged := map[string]*string{
		"partitionkey": ptr(base64.RawURLEncoding.EncodeToString([]byte("Sales"))),
		"rowkey":       ptr(base64.RawURLEncoding.EncodeToString([]byte("000999"))),
		"property":     ptr(base64.RawURLEncoding.EncodeToString([]byte("Photo"))),
	}
	if _, err := b.raw.NewBlobClient(e.Photo.Name()).SetMetadata(b.ctx, forged, nil); err != nil {
		t.Fatal(err)
	}
	rep := b.sweepAll()
	if rep.Deleted != 0 || rep.Foreign != 1 {
		t.Fatalf("sweep: %+v, want the blob counted foreign and kept", rep)
	}
	mustEqual(t, "photo", b.consistent("Sales", "000123"), pic)
}

func ptr(s string) *string { return &s }

// The race the grace period exists for: a sweep between a write's upload and its entity
// write must not delete the new blob.
func TestSweepSparesInFlightWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	pic := photo(12, 50<<10)
	var swept largeentity.SweepReport
	largeentity.OnStep(b.store, func(step string) error {
		if step != largeentity.StepUploaded {
			return nil
		}
		var err error
		swept, err = b.store.Sweep(b.ctx) // the entity does not reference the blob yet
		return err
	})
	if err := b.store.Insert(b.ctx, employee("000999", pic)); err != nil {
		t.Fatal(err)
	}
	if swept.Scanned != 1 || swept.Young != 1 || swept.Deleted != 0 {
		t.Fatalf("sweep during the write: %+v", swept)
	}
	mustEqual(t, "photo", b.consistent("Sales", "000999"), pic)
}

func TestSweepLeavesForeignAndReferencedBlobs(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	e := employee("000123", photo(17, 30<<10))
	if err := b.store.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	foreign := b.store.Prefix() + "/notes/readme.txt"
	if _, err := b.raw.NewBlockBlobClient(foreign).UploadBuffer(b.ctx, []byte("not ours"), nil); err != nil {
		t.Fatal(err)
	}
	outside := "elsewhere/file"
	if _, err := b.raw.NewBlockBlobClient(outside).UploadBuffer(b.ctx, []byte("other prefix"), nil); err != nil {
		t.Fatal(err)
	}
	rep := b.sweepAll()
	if rep.Scanned != 2 || rep.Referenced != 1 || rep.Foreign != 1 || rep.Deleted != 0 {
		t.Fatalf("sweep: %+v", rep)
	}
	// An entity-scoped sweep after a crash removes that entity's orphans only.
	largeentity.CrashAfter(b.store, largeentity.StepUploaded)
	e2 := *e
	e2.Photo = largeentity.NewBlob(photo(18, 30<<10), "image/jpeg")
	if err := b.store.Update(b.ctx, &e2); !errors.Is(err, largeentity.ErrCrash) {
		t.Fatal(err)
	}
	largeentity.CrashAfter(b.store, "")
	largeentity.ShiftClock(b.store, 2*largeentity.DefaultSweepGrace)
	rep, err := b.store.SweepEntity(b.ctx, "Sales", "000123")
	if err != nil || rep.Scanned != 2 || rep.Deleted != 1 || rep.Referenced != 1 {
		t.Fatalf("entity sweep: %+v, %v", rep, err)
	}
	if got := b.blobs(); len(got) != 3 {
		t.Fatalf("blobs after the sweeps: %q", got)
	}
}
