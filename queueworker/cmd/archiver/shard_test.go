package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// worker is one `archiver run` process.
type worker struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
}

// startWorker starts `archiver run` on queue: two jobs at once (so that the shard jobs
// spread over the processes), a 2 s lock so that a killed process's jobs come back soon.
func startWorker(t *testing.T, bin, queue string) *worker {
	t.Helper()
	w := &worker{stderr: &syncBuffer{}}
	w.cmd = exec.CommandContext(t.Context(), bin, "run", "-allow-any", "-queue", queue, "-concurrency", "2", "-visibility", "2s",
		"-max-dequeue", "1000", "-log-level", "warn")
	w.cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+testenv.ConnectionString(t))
	w.cmd.Stderr = w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

// stop ends the process with sig and checks that it did not panic.
func (w *worker) stop(t *testing.T, sig os.Signal) {
	t.Helper()
	_ = w.cmd.Process.Signal(sig)
	_ = w.cmd.Wait()
	if strings.Contains(w.stderr.String(), "panic") {
		t.Fatalf("the archiver panicked:\n%s", w.stderr.String())
	}
}

// countBlobs counts the blobs of container whose name contains part and ends with suffix.
func countBlobs(ctx context.Context, kb *killBed, cont, part, suffix string) (int, error) {
	n := 0
	pager := kb.clients.Blobs.NewListBlobsFlatPager(cont, &container.ListBlobsFlatOptions{})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		for _, b := range page.Segment.BlobItems {
			if strings.Contains(*b.Name, part) && strings.HasSuffix(*b.Name, suffix) {
				n++
			}
		}
	}
	return n, nil
}

// Three archiver processes on one queue archive a sharded 10,000-entity table (50,000
// under make soak) while one of them is killed (SIGKILL) in the middle, once at least one
// shard is exported and before the combine, and restarted. The table is deleted only after the
// generation's manifest exists; that manifest accounts for every entity (count, and the
// content a restore gives back exactly).
func TestThreeArchiversShardedTableWithKill(t *testing.T) {
	t.Parallel()
	kb := newKillBed(t)
	// 6 shards of about 1,700 entities over 20 partitions: each shard export reads two
	// pages, and the combine's checks read the whole table again, so the generation's
	// manifest comes well after the first shard's, and the kill lands between them.
	const shards = 6
	n := testenv.Scale(10_000, 50_000)
	tb := kb.table(t, "Big", n)
	cont := testenv.ContainerName(t)
	bin := binary(t)
	workers := []*worker{startWorker(t, bin, kb.queue), startWorker(t, bin, kb.queue), startWorker(t, bin, kb.queue)}
	defer func() {
		for _, w := range workers {
			w.stop(t, syscall.SIGTERM)
		}
	}()
	job := tablearchive.ArchiveTableJob{Table: tb.Name(), Container: cont, Sealed: true, Shards: shards}
	if err := tablearchive.EnqueueArchiveTable(kb.ctx, kb.client, job); err != nil {
		t.Fatal(err)
	}
	// The archive's length depends on the machine's load: poll while the archivers make
	// progress (blobs appear in the container, the table goes), and fail only when nothing
	// moved for testenv.DefaultStall.
	ctx := kb.ctx
	progress := func() int {
		k, _ := countBlobs(ctx, kb, cont, "", "")
		if exists, err := tb.Exists(ctx); err == nil && !exists {
			k++
		}
		return k
	}
	poll := func(what string, done func() (bool, error)) {
		t.Helper()
		last, moved := -1, time.Now()
		for {
			ok, err := done()
			if err != nil && !errors.Is(err, errs.ErrNotFound) && !strings.Contains(err.Error(), "ContainerNotFound") {
				t.Fatalf("%s: %v", what, err)
			}
			if ok {
				return
			}
			if p := progress(); p != last {
				last, moved = p, time.Now()
			} else if idle := time.Since(moved); idle > testenv.DefaultStall {
				t.Fatalf("%s: no progress for %v\n%s\n%s\n%s", what, idle.Round(time.Second), workers[0].stderr.String(), workers[1].stderr.String(), workers[2].stderr.String())
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: %v", what, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	// In the middle: a shard manifest exists, the generation's manifest does not.
	poll("a shard exported", func() (bool, error) {
		k, err := countBlobs(ctx, kb, cont, "/shard-", ".json")
		return k > 0, err
	})
	if k, err := countBlobs(ctx, kb, cont, "/", "/manifest.json"); err != nil || k != 0 {
		t.Fatalf("the generation's manifest exists before the kill (%d, %v): the kill is not in the middle", k, err)
	}
	workers[0].stop(t, syscall.SIGKILL)
	workers[0] = startWorker(t, bin, kb.queue)
	// The table goes only at the end: whenever it is seen gone, the manifest is there.
	var m tablearchive.Manifest
	poll("table archived", func() (bool, error) {
		exists, err := tb.Exists(ctx)
		if err != nil || exists {
			return false, err
		}
		if m, err = kb.a.ReadManifest(ctx, cont, tb.Name()); err != nil {
			t.Fatalf("the table is gone but the generation's manifest is not readable: %v", err)
		}
		return true, nil
	})
	if m.Shards != shards || m.Entities != int64(n) || m.Partitions != 20 {
		t.Fatalf("manifest %+v: want %d shards, %d entities, 20 partitions", m, shards, n)
	}
	// Every job is done: nothing poisoned, and the queue empties.
	if p, err := queueworker.PeekPoison(ctx, kb.clients.Queues.NewQueueClient(kb.queue+queueworker.PoisonSuffix), 32); err != nil && !errors.Is(err, errs.ErrNotFound) || len(p) != 0 {
		t.Fatalf("poisoned jobs: %+v (%v)", p, err)
	}
	back := kb.table(t, "Back", 0)
	rep, err := kb.a.RestoreTable(ctx, tablearchive.RestoreTableJob{Table: tb.Name(), Container: cont, Target: back.Name()})
	if err != nil || rep.Outcome != tablearchive.OutcomeRestored || rep.Manifest.Generation != m.Generation {
		t.Fatalf("restore: %+v %v", rep, err)
	}
	seen := make([]bool, n)
	count := 0
	for e, err := range back.Query(ctx, repo.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		i, perr := strconv.Atoi(e.RowKey)
		if perr != nil || i < 0 || i >= n || seen[i] || e.PartitionKey != fmt.Sprintf("user%02d", i%20) ||
			e.Properties["N"] != int32(i) || e.Properties["Note"] != strings.Repeat("x", 200) || len(e.Properties) != 2 {
			t.Fatalf("restored entity %s/%s %v is not one the table held (or twice)", e.PartitionKey, e.RowKey, e.Properties)
		}
		seen[i] = true
		count++
	}
	if count != n {
		t.Fatalf("restored %d entities, want %d", count, n)
	}
}
