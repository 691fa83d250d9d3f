package tablearchive

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A table that is neither a sealed period nor declared sealed is
// refused before any request, even with a writer busy on it.
func TestArchiveTableRefusesUnsealedTables(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	today, err := periodtable.Scheme{Prefix: "SignIns", Period: periodtable.Daily}.TableFor(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	yesterday, _ := periodtable.Scheme{Prefix: "SignIns", Period: periodtable.Daily}.TableFor(time.Now().Add(-24 * time.Hour))
	lastHour, _ := periodtable.Scheme{Prefix: "SignIns", Period: periodtable.Hourly}.TableFor(time.Now().Add(-30 * time.Minute))
	mark := ps.Table.Count() + ps.Blob.Count()
	for name, job := range map[string]ArchiveTableJob{
		"no seal":           {Table: b.current.Name(), Container: container},
		"today's period":    {Table: today.Name, Container: container, PeriodPrefix: "SignIns", Period: "daily"},
		"not of the scheme": {Table: b.current.Name(), Container: container, PeriodPrefix: "SignIns", Period: "daily"},
		"sealed and period": {Table: yesterday.Name, Container: container, PeriodPrefix: "SignIns", Period: "daily", Sealed: true},
		"bad period":        {Table: yesterday.Name, Container: container, PeriodPrefix: "SignIns", Period: "fortnightly"},
		"wrong period":      {Table: today.Name, Container: container, PeriodPrefix: "SignIns", Period: "hourly"},
		"within the grace":  {Table: lastHour.Name, Container: container, PeriodPrefix: "SignIns", Period: "hourly"},
	} {
		if _, err := b.a.ArchiveTable(b.ctx, job); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if _, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: today.Name, Container: container, PeriodPrefix: "SignIns", Period: "daily"}); !errors.Is(err, ErrNotSealed) {
		t.Errorf("today's period: %v, want ErrNotSealed", err)
	}
	if n := ps.Table.Count() + ps.Blob.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for unsealed tables", n)
	}
	// A period that ended more than the grace ago is sealed.
	old, _ := periodtable.Scheme{Prefix: "SignIns", Period: periodtable.Daily}.TableFor(time.Now().Add(-72 * time.Hour))
	if err := b.a.CheckSealed(ArchiveTableJob{Table: old.Name, Container: container, PeriodPrefix: "SignIns", Period: "daily"}); err != nil {
		t.Fatalf("a period ended two days ago: %v", err)
	}
}

// A writer inserts and updates throughout the export of a table declared sealed: the
// archiver finds the change, deletes nothing, and every acknowledged write is still in
// the table. Then the attacks at the narrowest windows: an update, a delete paired with
// an insert, during the export; an insert just before the delete.
func TestArchiveTableDetectsWritesByTimestamp(t *testing.T) {
	t.Parallel()
	// 300 sign-ins in pages of 100: each export and each check of the Timestamps reads
	// several pages, so the writes land between pages as well as between steps (3,000
	// under make soak).
	ps := testenv.Proxies(t)
	ps.Table.EmulatePaging(100, false)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	n := testenv.Scale(300, 3000)
	signIns(t, b, b.current, n)
	job := ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true}

	t.Run("writer throughout", func(t *testing.T) {
		ctx, stop := context.WithCancel(b.ctx)
		var acked []string
		writerDone := make(chan struct{})
		started := make(chan struct{})
		go func() {
			defer close(writerDone)
			for i := 0; ctx.Err() == nil; i++ {
				var err error
				rk := fmt.Sprintf("w%05d", i)
				if i%2 == 0 {
					err = b.current.Insert(ctx, employee("writer", rk, int32(i)))
				} else {
					err = b.current.Upsert(ctx, employee("user01", fmt.Sprintf("%06d", i%n), 99), nil)
					rk = ""
				}
				if err == nil && rk != "" {
					acked = append(acked, rk)
				}
				if i == 3 {
					close(started)
				}
			}
		}()
		<-started
		_, err := b.a.ArchiveTable(b.ctx, job)
		stop()
		<-writerDone
		if !errors.Is(err, ErrTableChanged) {
			t.Fatalf("archive of a table being written: %v, want ErrTableChanged", err)
		}
		for _, rk := range acked {
			if _, err := b.current.Get(b.ctx, "writer", rk); err != nil {
				t.Fatalf("acknowledged write %s lost: %v", rk, err)
			}
		}
	})

	for _, attack := range []struct{ step, what string }{
		{"exported", "update"}, {"exported", "delete+insert"}, {"before-delete", "insert"}, {"checked", "update"},
	} {
		t.Run(attack.step+" "+attack.what, func(t *testing.T) {
			a := b.another(t)
			var once sync.Once
			a.seams.step = func(_, s string) error {
				var err error
				if s == attack.step {
					once.Do(func() {
						switch attack.what {
						case "update":
							err = b.current.Upsert(b.ctx, employee("user02", "000002", 7), nil)
						case "delete+insert":
							if err = b.current.Delete(b.ctx, "user03", "000003", nil); err == nil {
								err = b.current.Insert(b.ctx, employee("late", attack.step, 1))
							}
						case "insert":
							err = b.current.Insert(b.ctx, employee("late", "insert"+attack.step, 1))
						}
					})
				}
				return err
			}
			if _, err := a.ArchiveTable(b.ctx, job); !errors.Is(err, ErrTableChanged) {
				t.Fatalf("%v, want ErrTableChanged", err)
			}
			if ok, err := b.current.Exists(b.ctx); err != nil || !ok {
				t.Fatalf("the table was deleted: %v %v", ok, err)
			}
		})
	}
	if t.Failed() {
		return
	}
	// The worker poisons such a job at once: a redelivery would not make it sealed.
	var ce *queueworker.CancelError
	if err := outcomeError("", fmt.Errorf("x: %w", ErrTableChanged), "t"); !errors.As(err, &ce) || strings.Contains(err.Error(), "will be retried") {
		t.Fatalf("handler error for a changed table: %v", err)
	}
}

// rewritePeriod creates the table of a period that ended days ago (a late writer that
// does not go through periodtable) with n entities.
func fillTable(t *testing.T, b *bed, name string, n int, tag string) {
	t.Helper()
	tb, err := repo.New[codec.Entity](b.clients.Tables, name, &repo.Options{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateIfNotExists(b.ctx); err != nil {
		t.Fatal(err)
	}
	items := make([]*codec.Entity, n)
	for i := range items {
		items[i] = &codec.Entity{PartitionKey: fmt.Sprintf("user%02d", i%5), RowKey: fmt.Sprintf("%s%05d", tag, i), Properties: map[string]any{"Tag": tag}}
	}
	if err := tb.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
}

// A table re-created after its archive is archived as a second
// generation beside the first, never over it; restoring all generations gives every
// entity back.
func TestArchiveTableGenerations(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	prefix := "G" + strings.ToUpper(testenv.QueueName(t)[:8])
	prefix = strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r
		}
		return 'X'
	}, prefix)
	// Today's table, written today (its Timestamps fit the period), archived by a worker
	// whose clock says the day ended two days ago.
	day, err := periodtable.Scheme{Prefix: prefix, Period: periodtable.Daily}.TableFor(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b.a.seams.clock = func() time.Time { return time.Now().Add(72 * time.Hour) }
	job := ArchiveTableJob{Table: day.Name, Container: container, PeriodPrefix: prefix, Period: "daily"}
	fillTable(t, b, day.Name, 100, "a")
	t.Cleanup(func() {
		if tb, err := repo.New[codec.Entity](b.clients.Tables, day.Name, nil); err == nil {
			_ = tb.DeleteTable(context.Background())
		}
	})
	rep1, err := b.a.ArchiveTable(b.ctx, job)
	if err != nil || rep1.Outcome != OutcomeMoved || rep1.Manifest.Entities != 100 {
		t.Fatalf("first archive: %+v %v", rep1, err)
	}
	// A late write re-creates the day's table; the next run archives it again.
	fillTable(t, b, day.Name, 1, "late")
	rep2, err := b.a.ArchiveTable(b.ctx, job)
	if err != nil || rep2.Outcome != OutcomeMoved || rep2.Manifest.Entities != 1 {
		t.Fatalf("second archive: %+v %v", rep2, err)
	}
	gens, err := b.a.Generations(b.ctx, container, day.Name)
	if err != nil || len(gens) != 2 || gens[0] != rep1.Manifest.Generation || gens[1] != rep2.Manifest.Generation {
		t.Fatalf("generations %v (%v), want %s then %s", gens, err, rep1.Manifest.Generation, rep2.Manifest.Generation)
	}
	first, err := b.a.readManifest(b.ctx, container, day.Name, gens[0])
	if err != nil || first != rep1.Manifest {
		t.Fatalf("the first generation changed: %+v %v", first, err)
	}
	if err := b.a.verifyData(b.ctx, container, first); err != nil {
		t.Fatalf("the first generation's data: %v", err)
	}
	restore := func(gen string, want int) {
		t.Helper()
		target := b.newTable(t, "R"+fmt.Sprint(want))
		rep, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: day.Name, Container: container, Target: target.Name(), Generation: gen})
		if err != nil || rep.Outcome != OutcomeRestored {
			t.Fatalf("restore %q: %+v %v", gen, rep, err)
		}
		got, err := target.Collect(b.ctx, repo.Query{})
		if err != nil || len(got) != want {
			t.Fatalf("restore %q: %d entities (%v), want %d", gen, len(got), err, want)
		}
	}
	restore(GenerationAll, 101)
	restore(GenerationLatest, 1)
	restore(gens[0], 100)
}

// Duplicate archive-table jobs at once: each writes its own generation, and every
// manifest matches its own data.
func TestArchiveTableConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	signIns(t, b, b.current, 200)
	job := ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true, KeepTable: true}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.another(t).ArchiveTable(b.ctx, job); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	gens, err := b.a.Generations(b.ctx, container, b.current.Name())
	if err != nil || len(gens) == 0 {
		t.Fatalf("generations: %v %v", gens, err)
	}
	for _, g := range gens {
		m, err := b.a.readManifest(b.ctx, container, b.current.Name(), g)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.a.verifyData(b.ctx, container, m); err != nil || m.Entities != 200 {
			t.Fatalf("generation %s: %+v %v", g, m, err)
		}
	}
	// A rerun of a -keep-table export of an unchanged table adds no generation.
	rep, err := b.a.ArchiveTable(b.ctx, job)
	if err != nil || rep.Outcome != OutcomeAlreadyArchived {
		t.Fatalf("rerun: %+v %v", rep, err)
	}
	if again, _ := b.a.Generations(b.ctx, container, b.current.Name()); len(again) != len(gens) {
		t.Fatalf("%d generations after the rerun, want %d", len(again), len(gens))
	}
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A restore whose export does not match its manifest writes nothing
// and is a permanent failure. The export is truncated by its last entity and the
// restore writes windows of 100: a restore that wrote each window as it read the data
// would have written two before it found the truncation.
func TestRestoreVerifiesBeforeWriting(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.a.seams.restoreWindow = 100
	container := testenv.ContainerName(t)
	signIns(t, b, b.current, 300)
	rep, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true, KeepTable: true})
	if err != nil {
		t.Fatal(err)
	}
	// Truncate the export: a valid gzip of the first lines only.
	var good []*codec.Entity
	if err := b.a.readLines(b.ctx, container, rep.Manifest, "", func(e *codec.Entity) error { good = append(good, e); return nil }); err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	for _, e := range good[:len(good)-1] {
		line, _ := codec.EncodeEntity(e)
		body.Write(line)
		body.WriteByte('\n')
	}
	gz := gzipBytes(t, []byte(body.String()))
	if _, err := b.clients.Blobs.UploadBuffer(b.ctx, container, rep.Manifest.DataBlob, gz, &azblob.UploadBufferOptions{}); err != nil {
		t.Fatal(err)
	}
	target := b.archive
	_, err = b.a.RestoreTable(b.ctx, RestoreTableJob{Table: b.current.Name(), Container: container, Target: target.Name()})
	if !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("restore of a corrupt export: %v, want ErrArchiveCorrupt", err)
	}
	if got, err := target.Collect(b.ctx, repo.Query{Top: 1}); err != nil || len(got) != 0 {
		t.Fatalf("the restore wrote %d entities before failing (%v)", len(got), err)
	}
	var ce *queueworker.CancelError
	if err := outcomeError("", err, "t"); !errors.As(err, &ce) {
		t.Fatalf("a corrupt export is retried: %v", err)
	}
}

// A manifest is untrusted: one that names another blob than its generation's data is
// refused (ErrArchiveCorrupt) without a request to the named blob, and nothing is written.
func TestForgedManifestIsRefused(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	if err := b.a.createContainer(b.ctx, container); err != nil {
		t.Fatal(err)
	}
	gen := newGeneration(time.Now())
	forged := Manifest{Format: ManifestFormat, Table: "Victims", Generation: gen, Entities: 1, Bytes: 10,
		SHA256: strings.Repeat("0", 64), DataBlob: "other-app/config.json"}
	body, _ := json.Marshal(forged)
	for _, name := range []string{ManifestBlobName("Victims", gen), "other-app/config.json"} {
		if _, err := b.clients.Blobs.UploadBuffer(b.ctx, container, name, body, nil); err != nil {
			t.Fatal(err)
		}
	}
	ps.Blob.Reset()
	_, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: "Victims", Container: container, Target: b.archive.Name()})
	if !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("restore with a forged manifest: %v, want ErrArchiveCorrupt", err)
	}
	if n := ps.Blob.CountMatching(func(r faultproxy.RequestInfo) bool { return strings.Contains(r.Path, "other-app") }); n != 0 {
		t.Fatalf("%d requests to the blob the forged manifest names", n)
	}
	if got, err := b.archive.Collect(b.ctx, repo.Query{Top: 1}); err != nil || len(got) != 0 {
		t.Fatalf("the restore wrote %d entities (%v)", len(got), err)
	}
}

// Two enqueuers spelling one table differently must address one export: the names of a
// table's exports do not depend on the spelling.
func TestArchiveNamesIgnoreTableNameCase(t *testing.T) {
	if a, b := ManifestBlobName("SignIns20240101", "g"), ManifestBlobName("signins20240101", "g"); a != b {
		t.Errorf("one table, two generation folders: %q and %q (restore -generation all and the already-archived check miss the other spelling's exports)", a, b)
	}
	if a, b := DataBlobName("SignIns20240101", "g"), DataBlobName("SIGNINS20240101", "g"); a != b {
		t.Errorf("one table, two data folders: %q and %q", a, b)
	}
}

func TestInvalidJobsRefusedWithoutRequest(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	mark := ps.Table.Count() + ps.Blob.Count()
	if _, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: "t", Container: "c"}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("archive-table with a bad name: %v", err)
	}
	if _, err := b.a.Generations(b.ctx, "archive", ""); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("generations of an empty table name: %v", err)
	}
	if _, err := b.a.ReadManifest(b.ctx, "Bad_Name", "Current"); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("manifest in a bad container: %v", err)
	}
	if n := ps.Table.Count() + ps.Blob.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for invalid jobs", n)
	}
}

// Least privilege: a job outside the archiver's allowlists is refused before any request,
// and the worker poisons it.
func TestAllowlistsRefuseWithoutRequest(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	a, err := New(b.clients, &Options{Retry: fastRetry(), AllowedTablePrefixes: []string{"signins"}, AllowedContainers: []string{"cold"}})
	if err != nil {
		t.Fatal(err)
	}
	mark := ps.Table.Count() + ps.Blob.Count()
	for name, run := range map[string]func() error{
		"table": func() error {
			_, err := a.ArchiveTable(b.ctx, ArchiveTableJob{Table: "Employees", Container: "cold", Sealed: true})
			return err
		},
		"restore target": func() error {
			_, err := a.RestoreTable(b.ctx, RestoreTableJob{Table: "SignIns1", Container: "cold", Target: "Employees"})
			return err
		},
	} {
		err := run()
		if !errors.Is(err, ErrNotAllowed) {
			t.Errorf("%s: %v, want ErrNotAllowed", name, err)
		}
		var ce *queueworker.CancelError
		if !errors.As(outcomeError("", err, name), &ce) {
			t.Errorf("%s: not poisoned at once", name)
		}
	}
	if n := ps.Table.Count() + ps.Blob.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for jobs outside the allowlists", n)
	}
	if _, err := New(b.clients, &Options{AllowedTablePrefixes: []string{""}}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("an empty prefix: %v", err)
	}
}
