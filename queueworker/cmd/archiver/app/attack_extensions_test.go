package app_test

import (
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
