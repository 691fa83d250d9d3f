package tablearchive

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

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
	// The sweep ages blobs by the service's clock, not by this host's (the review's
	// finding): time passing is modelled at the service too.
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
func TestAttackSweepDeletesDataOfManifestLandingBeforeDelete(t *testing.T) {
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
func TestAttackSweepTakesManifestReadFailureForAbsence(t *testing.T) {
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
