package tablearchive

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"

	"github.com/tablepatterns/tablepatterns/repo/account"
)

// blobTimes returns a blob's Last-Modified and the service's clock (the response's Date).
func blobTimes(t *testing.T, sb *shardBed, name string) (lastModified, now time.Time) {
	t.Helper()
	resp, err := sb.clients.Blobs.ServiceClient().NewContainerClient(sb.container).NewBlobClient(name).GetProperties(sb.ctx, nil)
	if err != nil || resp.LastModified == nil || resp.Date == nil {
		t.Fatalf("properties of %s: %v", name, err)
	}
	return *resp.LastModified, *resp.Date
}

// SweepAbortedExports must not take the finished shards' data of a sharded export that
// is still going on: shard 0's data is older than olderThan by the service's clock, but
// shard 1 finished within it, so the generation is kept whole, and it then completes.
func TestSweepKeepsActiveShardedGeneration(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	table, container := sb.current.Name(), sb.container
	job, gen := sb.planned(t, 3)
	export := func(i int) ShardManifest {
		t.Helper()
		if _, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: i}); err != nil {
			t.Fatal(err)
		}
		plan, err := sb.a.readPlan(sb.ctx, container, table, gen)
		if err != nil {
			t.Fatal(err)
		}
		sm, err := sb.a.readShardManifest(sb.ctx, container, table, gen, i, plan)
		if err != nil {
			t.Fatal(err)
		}
		return sm
	}
	s0 := export(0)
	l0, _ := blobTimes(t, sb, s0.DataBlob)
	// Shard 1 finishes at least 5 s later by the service's clock (Last-Modified has
	// whole seconds): poll the service's clock, with a deadline.
	const gap = 5 * time.Second
	deadline := time.Now().Add(time.Minute)
	for _, now := blobTimes(t, sb, s0.DataBlob); now.Before(l0.Add(gap)); _, now = blobTimes(t, sb, s0.DataBlob) {
		if time.Now().After(deadline) {
			t.Fatal("the service's clock did not advance")
		}
		time.Sleep(100 * time.Millisecond) // polling the service's clock, not synchronisation
	}
	s1 := export(1)
	l1, _ := blobTimes(t, sb, shardManifestName(table, gen, 1))
	if l1.Sub(l0) < gap {
		t.Fatalf("shard 1 (%v) is not %v after shard 0's data (%v): the test would prove nothing", l1, gap, l0)
	}
	// Age the generation by the service's clock so that shard 0's data is just past
	// olderThan and shard 1's blobs are not.
	_, now := blobTimes(t, sb, s1.DataBlob)
	sweeper := sb.archiver(t, nil)
	sweeper.seams.serviceAhead = time.Hour - now.Sub(l0)
	swept, err := sweeper.SweepAbortedExports(sb.ctx, container, table, time.Hour, false)
	if err != nil || len(swept) != 0 {
		t.Fatalf("a sweep during the export (shard 0's data past olderThan, shard 1 within it) removed %v (%v)", swept, err)
	}
	export(2)
	rep, err := sb.a.CombineShards(sb.ctx, CombineJob{ArchiveTableJob: job, Generation: gen})
	if err != nil || rep.Outcome != OutcomeMoved {
		t.Fatalf("combine: %+v %v", rep, err)
	}
	sb.assertArchivedOnce(t, gen)
	assertRestored(t, sb.bed, container, table, GenerationLatest, sb.want)
}

// A sharded export stalled longer than olderThan is swept; the generation can then
// never complete, and its jobs say so (ErrArchiveCorrupt, permanent: a shard job that
// finds its manifest but not its data, the combine); the table is untouched, and a new
// archive-table job archives it.
func TestShardJobSaysItsDataIsGone(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	table, container := sb.current.Name(), sb.container
	job, gen := sb.planned(t, 3)
	for i := range 2 {
		if _, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: i}); err != nil {
			t.Fatal(err)
		}
	}
	sweeper := sb.archiver(t, nil)
	sweeper.seams.serviceAhead = 2 * time.Hour
	swept, err := sweeper.SweepAbortedExports(sb.ctx, container, table, time.Hour, false)
	if err != nil || len(swept) != 2 {
		t.Fatalf("a sweep of a generation stalled past olderThan removed %v (%v), want both shards' data", swept, err)
	}
	rerun, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: 0})
	if !errors.Is(err, ErrArchiveCorrupt) || !strings.Contains(err.Error(), "data blob is gone") {
		t.Fatalf("shard 0 rerun after its data was swept: %s %v, want ErrArchiveCorrupt saying the data is gone", rerun.Outcome, err)
	}
	if _, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: 2}); err != nil {
		t.Fatal(err)
	}
	if rep, err := sb.a.CombineShards(sb.ctx, CombineJob{ArchiveTableJob: job, Generation: gen}); !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("combine without its shards' data: %+v %v, want ErrArchiveCorrupt", rep, err)
	}
	if ok, err := sb.current.Exists(sb.ctx); !ok || err != nil {
		t.Fatalf("the table is gone (%v)", err)
	}
	rep, err := sb.a.ArchiveTable(sb.ctx, ArchiveTableJob{Table: table, Container: container, Sealed: true})
	if err != nil || rep.Outcome != OutcomeMoved || rep.Manifest.Generation == gen {
		t.Fatalf("a new archive-table job: %+v %v", rep, err)
	}
	assertRestored(t, sb.bed, container, table, GenerationLatest, sb.want)
}

// A sweep over an archived sharded generation reads the generation's manifest once and
// each shard's manifest once, however many data blobs the generation holds (one per
// shard, and a second attempt's data for shard 1, which no shard manifest names and
// the sweep removes); reading them again for every data blob made every sweep cost two
// downloads per shard data blob of every archived generation.
func TestSweepReadsShardedGenerationOnce(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	sb := setupShards(t, 140)
	table, container := sb.current.Name(), sb.container
	_, m := sb.archivedKept(t, 4)
	n := m.Shards
	if n < 3 {
		t.Fatalf("the generation has %d shards: the test needs several", n)
	}
	orphan := shardDataName(table, m.Generation, 1)
	upload(t, sb.bed, container, orphan, gzipBytes(t, []byte("{}\n")))

	s := sweeper(t, ps, 2*time.Hour) // only the sweep goes through ps
	swept, err := s.SweepAbortedExports(sb.ctx, container, table, time.Hour, false)
	if err != nil || !sameSet(swept, []string{orphan}) {
		t.Fatalf("swept %v (%v), want [%s]", swept, err, orphan)
	}
	reads := map[string]int{}
	others := 0
	for _, r := range ps.Blob.Requests() {
		switch {
		case r.Method == http.MethodGet && strings.Contains(r.RawQuery, "comp=list"):
		case r.Method == http.MethodDelete && strings.HasSuffix(r.Path, "/"+orphan):
		case r.Method == http.MethodGet:
			reads[r.Path[strings.LastIndex(r.Path, "/")+1:]]++
		default:
			others++
		}
	}
	want := map[string]int{"manifest.json": 1}
	for i := range n {
		want[fmt.Sprintf("shard-%04d.json", i)] = 1
	}
	if !reflect.DeepEqual(reads, want) || others != 0 {
		t.Fatalf("the sweep downloaded %v and sent %d other requests; want each manifest once: %v", reads, others, want)
	}
	// The generation is whole: the table (kept) still holds it, and it restores.
	assertRestored(t, sb.bed, container, table, GenerationLatest, sb.want)
}

// "The sweep never deletes data a manifest refers to, even racing a running export", for
// a sharded export whose generation the sweep reads once, before all of its deletes:
// shard 1's data is listed and read as an orphan (no generation manifest, no shard
// manifest, past olderThan), and the sweep's delete of it is held at the proxy while
// the shard job finishes (touch, shard manifest): the delete meets 412 and the data
// stays. With the delete first, the shard job fails and names no data that is gone.
// Either way the generation then completes and restores whole.
func TestSweepRacesShardManifest(t *testing.T) {
	t.Parallel()
	t.Run("shard first", func(t *testing.T) { t.Parallel(); raceSweepAndShard(t, false) })
	t.Run("delete first", func(t *testing.T) { t.Parallel(); raceSweepAndShard(t, true) })
}

// raceSweepAndShard runs one order of TestSweepRacesShardManifest.
func raceSweepAndShard(t *testing.T, deleteFirst bool) {
	t.Helper()
	ps := testenv.Proxies(t)
	sb := setupShards(t, 300)
	table, container := sb.current.Name(), sb.container
	job, gen := sb.planned(t, 3)
	exported, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(resume) }) }
	t.Cleanup(release)
	a := sb.archiver(t, func(j, s string) error {
		if j == "archive-table-shard" && s == "exported" {
			close(exported)
			<-resume
		}
		return nil
	})
	shard := make(chan error, 1)
	go func() {
		_, err := a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: 1})
		shard <- err
	}()
	select {
	case <-exported:
	case err := <-shard:
		t.Fatalf("shard 1 ended before its data was checked: %v", err)
	}
	del := ps.Blob.PauseAt("sweep delete", faultproxy.All(faultproxy.MethodIs(http.MethodDelete), faultproxy.PathContains("/shard-0001-")), 1)
	t.Cleanup(del.Release)
	type result struct {
		swept []string
		err   error
	}
	sweep, s := make(chan result, 1), sweeper(t, ps, 2*time.Hour)
	go func() {
		swept, err := s.SweepAbortedExports(sb.ctx, container, table, time.Hour, false)
		sweep <- result{swept, err}
	}()
	if err := del.Wait(sb.ctx); err != nil {
		t.Fatal(err)
	}
	if deleteFirst {
		del.Release()
		if r := <-sweep; r.err != nil || len(r.swept) != 1 {
			t.Fatalf("sweep: %v %v, want shard 1's data", r.swept, r.err)
		}
		release()
		if err := <-shard; err == nil {
			t.Fatal("shard 1 succeeded after its data was swept")
		}
		var sm ShardManifest
		if err := sb.a.readJSON(sb.ctx, container, shardManifestName(table, gen, 1), manifestLimit, &sm); !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("shard 1's manifest after its data was swept: %+v %v, want none", sm, err)
		}
	} else {
		release()
		if err := <-shard; err != nil {
			t.Fatalf("shard 1: %v", err)
		}
		del.Release()
		if r := <-sweep; r.err != nil || len(r.swept) != 0 {
			t.Fatalf("sweep: removed %v (%v) after shard 1's manifest named it", r.swept, r.err)
		}
	}
	for i := range 3 {
		if _, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: i}); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	sb.combined(t, CombineJob{ArchiveTableJob: job, Generation: gen})
	sb.assertArchivedOnce(t, gen)
}

// sweeper is an Archiver on the proxied clients whose clock, and the service's time as
// its sweep sees it, run ahead by ahead (an export that ran longer than -older-than).
func sweeper(t *testing.T, ps *testenv.ProxySet, ahead time.Duration) *Archiver {
	t.Helper()
	clients, err := account.NewClients(ps.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(clients, &Options{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	a.seams.clock = func() time.Time { return time.Now().Add(ahead) }
	// The sweep ages blobs by the service's clock, not by this host's: time passing is
	// modelled at the service too.
	a.seams.serviceAhead = ahead
	return a
}

// holdExportAtManifest starts an archive-table job (table deleted at the end) that stops
// after its last check, just before its manifest, until resume is closed.
func holdExportAtManifest(t *testing.T, b *bed, job ArchiveTableJob) (resume chan struct{}, done chan error, rep *TableReport) {
	t.Helper()
	exp := b.another(t)
	reached, resume, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var once sync.Once
	exp.seams.step = func(_, s string) error {
		if s == "checked" {
			once.Do(func() { close(reached) })
			<-resume
		}
		return nil
	}
	rep = &TableReport{}
	go func() {
		r, err := exp.ArchiveTable(b.ctx, job)
		*rep = r
		done <- err
	}()
	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("export ended before its manifest: %+v %v", *rep, err)
	}
	return resume, done, rep
}

// The sweep re-reads the manifest before it deletes ("if the manifest appeared since the
// listing, the export finished: keep it"), but its delete is unconditional: a manifest
// that lands between that read and the delete loses its data, and the exporter, which
// never looks at its data blob again after the manifest, deletes the table. Expected:
// the complete generation restores; no table is deleted on the strength of missing data.
func TestSweepDeletesDataOfManifestLandingBeforeDelete(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, "")
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 50, "a")
	job := ArchiveTableJob{Table: name, Container: container, Sealed: true}
	resume, done, rep := holdExportAtManifest(t, b, job)

	del := ps.Blob.PauseAt("sweep delete", faultproxy.All(faultproxy.MethodIs(http.MethodDelete), faultproxy.PathContains("entities.jsonl.gz")), 1)
	t.Cleanup(del.Release)
	s := sweeper(t, ps, 2*time.Hour)
	swept := make(chan error, 1)
	go func() {
		_, err := s.SweepAbortedExports(b.ctx, container, name, time.Hour, false)
		swept <- err
	}()
	if err := del.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	close(resume) // the manifest lands now, and the table is deleted
	if err := <-done; err != nil || rep.Outcome != OutcomeMoved {
		t.Fatalf("export: %+v %v", rep, err)
	}
	del.Release()
	if err := <-swept; err != nil {
		t.Fatalf("sweep: %v", err)
	}
	assertRestorable(t, b, container, name, 50)
}

// The same window, closed by a read that fails: the sweep's re-read of the manifest is a
// transient failure (503 until retries run out) and the sweep takes that as "no manifest".
func TestSweepTakesManifestReadFailureForAbsence(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, "")
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 50, "a")
	job := ArchiveTableJob{Table: name, Container: container, Sealed: true}
	resume, done, rep := holdExportAtManifest(t, b, job)

	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ps.Blob.AddRule(faultproxy.Rule{Name: "manifest unreadable", Action: faultproxy.Respond(http.StatusServiceUnavailable, "ServerBusy"),
		Match: func(r *http.Request) bool {
			if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "manifest.json") {
				return false
			}
			once.Do(func() { close(reached) })
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return true
		}})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	s := sweeper(t, ps, 2*time.Hour)
	swept := make(chan error, 1)
	go func() {
		_, err := s.SweepAbortedExports(b.ctx, container, name, time.Hour, false)
		swept <- err
	}()
	select {
	case <-reached:
	case err := <-swept:
		t.Fatalf("sweep ended before reading the manifest: %v", err)
	}
	close(resume)
	if err := <-done; err != nil || rep.Outcome != OutcomeMoved {
		t.Fatalf("export: %+v %v", rep, err)
	}
	close(release)
	err := <-swept
	t.Logf("sweep: %v", err)
	assertRestorable(t, b, container, name, 50)
}

// assertRestorable restores the latest generation of name into a new table and checks
// the count.
func assertRestorable(t *testing.T, b *bed, container, name string, want int) {
	t.Helper()
	if ok, _ := b.current.Exists(b.ctx); ok {
		return // the table is still there: nothing lost
	}
	target := b.newTable(t, "Back")
	rep, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: container, Target: target.Name()})
	if err != nil || rep.Outcome != OutcomeRestored {
		t.Fatalf("table %s deleted, and its archive does not restore: %+v %v (blobs: %v)", name, rep, err, blobNames(t, b, container))
	}
	n := 0
	for _, err := range target.Query(b.ctx, repo.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != want {
		t.Fatalf("restored %d entities, want %d", n, want)
	}
}
