package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// killLoop starts `archiver run` on queue and kills it with SIGKILL after a random time,
// kills times; the visibility timeout is 1 s so that the next process gets the killed
// deliveries back quickly, and max-dequeue is high so that kills do not poison them.
func killLoop(t *testing.T, bin, queue string, kills int, minD, maxD time.Duration) {
	t.Helper()
	for i := range kills {
		var stderr syncBuffer
		cmd := exec.CommandContext(t.Context(), bin, "run", "-allow-any", "-queue", queue, "-visibility", "1s", "-max-dequeue", "1000", "-log-level", "error")
		cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+testenv.ConnectionString(t))
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The kill's timing is the attack: a random point of the job, not a wait for state.
		timer := time.NewTimer(minD + time.Duration(rand.Int64N(int64(maxD-minD))))
		select {
		case <-timer.C:
		case <-t.Context().Done():
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if strings.Contains(stderr.String(), "panic") {
			t.Fatalf("kill %d: the archiver panicked:\n%s", i, stderr.String())
		}
	}
}

// drainQueue runs the archiver to the end of the queue, unharmed. It is given no deadline
// of its own: a busy machine makes a drain slower, and go test -timeout bounds a hang.
func drainQueue(t *testing.T, bin, queue string) string {
	t.Helper()
	var stdout, stderr syncBuffer
	cmd := exec.CommandContext(t.Context(), bin, "run", "-drain", "-allow-any", "-queue", queue, "-visibility", "1s", "-max-dequeue", "1000", "-log-level", "warn")
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+testenv.ConnectionString(t))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run -drain: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "poisoned 0") {
		t.Fatalf("run -drain poisoned jobs:\n%s\n%s", stdout.String(), stderr.String())
	}
	return stdout.String()
}

type killBed struct {
	ctx     context.Context
	clients *account.Clients
	a       *tablearchive.Archiver
	client  *queueworker.Client
	queue   string
}

func newKillBed(t *testing.T) *killBed {
	t.Helper()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := tablearchive.New(clients, nil)
	if err != nil {
		t.Fatal(err)
	}
	kb := &killBed{ctx: t.Context(), clients: clients, a: a, queue: testenv.QueueName(t)}
	q := clients.Queues.NewQueueClient(kb.queue)
	if _, err := q.Create(kb.ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = q.Delete(context.Background(), nil)
		_, _ = clients.Queues.NewQueueClient(kb.queue+queueworker.PoisonSuffix).Delete(context.Background(), nil)
	})
	if kb.client, err = queueworker.NewClient(q, nil); err != nil {
		t.Fatal(err)
	}
	return kb
}

func (kb *killBed) table(t *testing.T, suffix string, n int) *repo.Table[codec.Entity] {
	t.Helper()
	name := testenv.TableName(t)
	tb, err := repo.New[codec.Entity](kb.clients.Tables, name[:min(len(name), 50)]+suffix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateIfNotExists(kb.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tb.DeleteTable(context.Background()) })
	items := make([]*codec.Entity, n)
	for i := range items {
		items[i] = &codec.Entity{PartitionKey: fmt.Sprintf("user%02d", i%20), RowKey: fmt.Sprintf("%06d", i),
			Properties: map[string]any{"N": int32(i), "Note": strings.Repeat("x", 200)}}
	}
	if n > 0 {
		if err := tb.BulkWrite(kb.ctx, items, nil); err != nil {
			t.Fatal(err)
		}
	}
	return tb
}

// 8 kill -9 of the archiver during 300 archive-entity jobs (20 during 1,000 under make
// soak); the final run moves every entity exactly once: all in the archive, none left in
// the source.
func TestKillNineDuringArchiveEntity(t *testing.T) {
	t.Parallel()
	kb := newKillBed(t)
	// A run lives 100 to 700 ms and moves tens of jobs: 300 jobs outlast the 8 kills, so
	// each lands in the middle of a job; more kills only repeat the same points.
	n, kills := testenv.Scale(300, 1000), testenv.Scale(8, 20)
	src := kb.table(t, "Src", n)
	dst := kb.table(t, "Dst", 0)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			job := consistency.ArchiveEntityJob{Source: src.Name(), PartitionKey: fmt.Sprintf("user%02d", i%20), RowKey: fmt.Sprintf("%06d", i), TargetTable: dst.Name()}
			if err := consistency.EnqueueArchiveEntity(kb.ctx, kb.client, job); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	bin := binary(t)
	killLoop(t, bin, kb.queue, kills, 100*time.Millisecond, 700*time.Millisecond)
	drainQueue(t, bin, kb.queue)
	if left, err := src.Collect(kb.ctx, repo.Query{Top: 5}); err != nil || len(left) != 0 {
		t.Fatalf("source still holds %v (%v)", left, err)
	}
	got, err := dst.Collect(kb.ctx, repo.Query{})
	if err != nil || len(got) != n {
		t.Fatalf("archive holds %d entities (%v), want %d", len(got), err, n)
	}
	for _, e := range got {
		if e.Properties["N"] == nil || e.Properties[consistency.SourceETagProperty] == nil {
			t.Fatalf("archived copy %+v", e)
		}
	}
}

// 8 kill -9 during archive-table of 2,000 entities (20 during 5,000 under make soak),
// then a run to the end: the table is gone and every generation written verifies against
// its manifest, the latest holding every entity.
func TestKillNineDuringArchiveTable(t *testing.T) {
	t.Parallel()
	kb := newKillBed(t)
	// 2,000 entities: the export and each check read two pages of 1,000, so a kill 150 ms
	// to 1.5 s into a run lands inside the export, its checks or the delete.
	n, kills := testenv.Scale(2000, 5000), testenv.Scale(8, 20)
	tb := kb.table(t, "Day", n)
	container := testenv.ContainerName(t)
	job := tablearchive.ArchiveTableJob{Table: tb.Name(), Container: container, Sealed: true}
	if err := tablearchive.EnqueueArchiveTable(kb.ctx, kb.client, job); err != nil {
		t.Fatal(err)
	}
	bin := binary(t)
	killLoop(t, bin, kb.queue, kills, 150*time.Millisecond, 1500*time.Millisecond)
	drainQueue(t, bin, kb.queue)
	if ok, err := tb.Exists(kb.ctx); err != nil || ok {
		t.Fatalf("the table still exists: %v %v", ok, err)
	}
	gens, err := kb.a.Generations(kb.ctx, container, tb.Name())
	if err != nil || len(gens) == 0 {
		t.Fatalf("generations %v (%v)", gens, err)
	}
	m, err := kb.a.ReadManifest(kb.ctx, container, tb.Name())
	if err != nil || m.Entities != int64(n) {
		t.Fatalf("latest manifest %+v (%v)", m, err)
	}
	target := kb.table(t, "Back", 0)
	rep, err := kb.a.RestoreTable(kb.ctx, tablearchive.RestoreTableJob{Table: tb.Name(), Container: container, Target: target.Name(), Generation: tablearchive.GenerationAll})
	if err != nil || rep.Outcome != tablearchive.OutcomeRestored {
		t.Fatalf("restore of every generation: %+v %v", rep, err)
	}
	t.Logf("%d generation(s) after %d kills", len(gens), kills)
}

// 8 kill -9 during restore-table of 2,000 entities (20 during 5,000 under make soak): the
// restored table holds them all.
func TestKillNineDuringRestoreTable(t *testing.T) {
	t.Parallel()
	kb := newKillBed(t)
	// 2,000 entities: the snapshot's verification and the upserts (20 transactions) take
	// long enough for kills 150 ms to 1.5 s into a run to land inside them.
	n, kills := testenv.Scale(2000, 5000), testenv.Scale(8, 20)
	tb := kb.table(t, "Old", n)
	container := testenv.ContainerName(t)
	if _, err := kb.a.ArchiveTable(kb.ctx, tablearchive.ArchiveTableJob{Table: tb.Name(), Container: container, Sealed: true}); err != nil {
		t.Fatal(err)
	}
	target := kb.table(t, "Restored", 0)
	if err := tablearchive.EnqueueRestoreTable(kb.ctx, kb.client, tablearchive.RestoreTableJob{Table: tb.Name(), Container: container, Target: target.Name()}); err != nil {
		t.Fatal(err)
	}
	bin := binary(t)
	killLoop(t, bin, kb.queue, kills, 150*time.Millisecond, 1500*time.Millisecond)
	drainQueue(t, bin, kb.queue)
	got, err := target.Collect(kb.ctx, repo.Query{Select: []string{"N"}})
	if err != nil || len(got) != n {
		t.Fatalf("restored %d entities (%v), want %d", len(got), err, n)
	}
}

// `run -drain` stopped by SIGTERM is a graceful stop (exit 0, as
// `run`), and the signal is logged when it arrives.
func TestDrainStopsOnSIGTERMWithExitZero(t *testing.T) {
	t.Parallel()
	kb := newKillBed(t)
	// A message invisible for an hour keeps Drain waiting.
	job := tablearchive.ArchiveTableJob{Table: "Waiting", Container: "cold", Sealed: true}
	if _, err := queueworker.Enqueue(kb.ctx, kb.client, tablearchive.KindArchiveTable, "later", job, &queueworker.EnqueueOptions{VisibilityDelay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runUntilTerm(t, binary(t), "worker started", "run", "-drain", "-allow-any", "-queue", kb.queue, "-log-level", "info")
	if err != nil {
		t.Fatalf("run -drain after SIGTERM: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
	}
	if !strings.Contains(stderr, "stop requested") {
		t.Fatalf("the signal was not logged:\n%s", stderr)
	}
}
