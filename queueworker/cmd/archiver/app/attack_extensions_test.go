package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
)

// Attack on Extensions with a nil entry: a builder that returns a typed nil index (a
// nil *secondaryindex.Inter in the Index interface, no error) is a bad configuration. The
// archiver must refuse it as such (exit 2, before any request), not panic.
func TestAttackExtensionsTypedNilIndex(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := newIndexBed(t, ps.ConnectionString)
	b.ext = &app.Extensions{Indexes: map[string]func(*app.Env) (app.Index, error){
		"employee-email": func(*app.Env) (app.Index, error) {
			var x *secondaryindex.Inter[staffer]
			return x, nil
		},
	}}
	before := ps.Table.Count() + ps.Queue.Count()
	var (
		code     int
		stderr   string
		panicked any
	)
	func() {
		defer func() { panicked = recover() }()
		code, _, stderr = b.archiver("enqueue", "verify", "-index", "employee-email", "-pk", "Sales")
	}()
	if panicked != nil {
		t.Fatalf("MainWith panicked on a builder that returned a typed nil index: %v", panicked)
	}
	if code != app.ExitUsage {
		t.Fatalf("exit %d, stderr %q; want exit 2", code, stderr)
	}
	if n := ps.Table.Count() + ps.Queue.Count() - before; n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// Attack on "the queue is created only when the first enqueue finds none": `enqueue
// verify` of every partition of an index whose table does not exist fails (nothing to
// verify), and must leave the account as it was: no job queue created for a command
// that enqueued nothing.
func TestAttackEnqueueIndexMissingTableCreatesNoQueue(t *testing.T) {
	t.Parallel()
	b := newIndexBed(t, testenv.ConnectionString(t))
	missing := testenv.TableName(t) // never created
	b.ext = &app.Extensions{Indexes: map[string]func(*app.Env) (app.Index, error){"employee-email": emailIndex(missing)}}
	code, out, stderr := b.archiver("enqueue", "verify", "-index", "employee-email")
	t.Logf("exit %d\n%s\n%s", code, out, stderr)
	if code == 0 {
		t.Fatal("enqueue verify of a missing table succeeded")
	}
	qc := b.clients.Queues.NewQueueClient(b.queue)
	t.Cleanup(func() { _, _ = qc.Delete(t.Context(), nil) })
	if _, err := qc.GetProperties(t.Context(), nil); err == nil {
		t.Fatalf("the job queue %s was created by a command that enqueued nothing (stderr %q)", b.queue, strings.TrimSpace(stderr))
	}
}

// Attack on "nothing secret in output or errors": `enqueue verify|repair|backfill` of a
// team's index against an unreachable account whose connection string carries a key and
// a SAS: the failure is reported, and neither secret appears in stdout or stderr (the
// index's listing, the queue's enqueue and its creation all fail).
func TestAttackEnqueueIndexUnreachableLeaksNoSecret(t *testing.T) {
	t.Parallel()
	b := newIndexBed(t, "")
	const key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	const sig = "sig=SECRETsignature0123456789abcdef%3D"
	for _, cs := range []string{
		"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + key +
			";TableEndpoint=http://127.0.0.1:1/devstoreaccount1;QueueEndpoint=http://127.0.0.1:1/devstoreaccount1;BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;",
		"TableEndpoint=http://127.0.0.1:1/devstoreaccount1;QueueEndpoint=http://127.0.0.1:1/devstoreaccount1;BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;SharedAccessSignature=sv=2022-11-02&ss=tqb&srt=sco&sp=rwdlacu&se=2099-01-01T00:00:00Z&" + sig,
	} {
		b.cs = cs
		for _, job := range []string{"verify"} { // backfill and repair take the same path (about 12 s each: retries)
			for _, pk := range [][]string{nil} {
				code, out, stderr := b.archiver(append([]string{"enqueue", job, "-index", "employee-email", "-log-level", "debug"}, pk...)...)
				if code == 0 {
					t.Fatalf("enqueue %s against an unreachable account succeeded", job)
				}
				all := out + stderr
				for _, secret := range []string{key, key[:20], "SECRETsignature", "sig="} {
					if strings.Contains(all, secret) {
						t.Fatalf("enqueue %s %v: output holds %q:\n%s", job, pk, secret, all)
					}
				}
			}
		}
	}
}

// `enqueue verify -index NAME` without -pk, the job queue not there yet: the partitions
// are listed once (one query per partition and one that finds the end), not once before
// the first enqueue meets QueueNotFound and again after the queue is created.
func TestEnqueueIndexListsPartitionsOnceWhenTheQueueIsMissing(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := newIndexBed(t, ps.ConnectionString)
	b.seed(map[string]int{"HR": 1, "IT": 2, "Sales": 3})
	qc := b.clients.Queues.NewQueueClient(b.queue)
	t.Cleanup(func() { _, _ = qc.Delete(context.Background(), nil) })
	before := ps.Table.Count()
	if out, _ := b.must("enqueue", "verify", "-index", "employee-email"); !strings.Contains(out, "enqueued verify of index employee-email (every partition)") {
		t.Fatalf("enqueue verify: %q", out)
	}
	if n := ps.Table.Count() - before; n != 4 {
		t.Fatalf("%d table requests for 3 partitions, want 4 (each partition listed once, and the end)", n)
	}
	resp, err := qc.GetProperties(t.Context(), nil)
	if err != nil || resp.ApproximateMessagesCount == nil || *resp.ApproximateMessagesCount != 3 {
		t.Fatalf("the job queue holds %v messages (%v), want 3: one per partition", resp.ApproximateMessagesCount, err)
	}
}
