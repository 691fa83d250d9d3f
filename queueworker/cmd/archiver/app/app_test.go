package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

func TestMain(m *testing.M) {
	// -auth default signs in with tokenCred, and every client trusts the OAuth Azurite's
	// certificate.
	app.SetAuthHooks(func() (azcore.TokenCredential, error) { return tokenCred, nil },
		policy.ClientOptions{Transport: oauthTransport{}})
	testenv.Main(m)
}

// archiver runs the command with the test account's connection string in TP_CONN.
func archiver(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut strings.Builder
	cs := testenv.ConnectionString(t)
	getenv := func(k string) string {
		if k == "TP_CONN" {
			return cs
		}
		return ""
	}
	ctx := t.Context() // a run that never ends hangs until go test -timeout
	code := app.Main(ctx, append(args, "-connection-string-env", "TP_CONN"), &out, &errOut, getenv)
	return code, out.String(), errOut.String()
}

func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"frobnicate"},
		{"run", "-concurrency", "0"},
		{"run", "-queue", "Bad_Queue"},
		{"run", "-log-level", "loud"},
		{"enqueue", "archive-entity", "-pk", "p", "-rk", "r", "-target-table", "Archive"}, // no -source
		{"enqueue", "archive-table", "-table", "t1", "-container", "cold"},                // bad table name
		{"enqueue", "nothing"},
		{"poison", "list", "-n", "99"},
		{"run", "stray-argument"},
		{"run", "-drain"},                           // least privilege: no allowlists named
		{"run", "-drain", "-allow-tables", "Emp"},   // and both are needed
		{"run", "-allow-any", "-allow-tables", "E"}, // -allow-any excludes the lists
	} {
		code, _, stderr := archiver(t, args...)
		if code != app.ExitUsage || !strings.Contains(stderr, "archiver:") {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 with a message", args, code, stderr)
		}
	}
	var out strings.Builder
	if code := app.Main(t.Context(), nil, &out, &out, func(string) string { return "" }); code != app.ExitUsage {
		t.Errorf("no command: exit %d", code)
	}
	out.Reset()
	if code := app.Main(t.Context(), []string{"help"}, &out, &out, func(string) string { return "" }); code != app.ExitOK || !strings.Contains(out.String(), "archiver enqueue archive-table") {
		t.Errorf("help: exit %d, %q", code, out.String())
	}
}

func TestArchiverEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.TableName(t)
	current, _ := repo.New[codec.Entity](clients.Tables, name+"Cur", nil)
	archive, _ := repo.New[codec.Entity](clients.Tables, name+"Arc", nil)
	day, _ := repo.New[codec.Entity](clients.Tables, name+"Day", nil)
	for _, tb := range []*repo.Table[codec.Entity]{current, archive, day} {
		if err := tb.CreateIfNotExists(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tb.DeleteTable(context.Background()) })
	}
	var emps, signIns []*codec.Entity
	for i := 0; i < 5; i++ {
		emps = append(emps, &codec.Entity{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", i), Properties: map[string]any{"Age": int32(30 + i)}})
	}
	for i := 0; i < 120; i++ {
		signIns = append(signIns, &codec.Entity{PartitionKey: fmt.Sprintf("user%d", i%4), RowKey: fmt.Sprintf("%04d", i), Properties: map[string]any{"OK": i%2 == 0}})
	}
	if err := current.BulkWrite(ctx, emps, nil); err != nil {
		t.Fatal(err)
	}
	if err := day.BulkWrite(ctx, signIns, nil); err != nil {
		t.Fatal(err)
	}
	queue := testenv.QueueName(t)
	container := testenv.ContainerName(t)
	for i := 0; i < 3; i++ {
		code, _, stderr := archiver(t, "enqueue", "archive-entity", "-queue", queue, "-source", current.Name(),
			"-pk", "Sales", "-rk", fmt.Sprintf("%06d", i), "-target-table", archive.Name())
		if code != 0 {
			t.Fatalf("enqueue: %d %s", code, stderr)
		}
	}
	steps := [][]string{
		{"enqueue", "archive-entity", "-queue", queue, "-source", current.Name(), "-pk", "Sales", "-rk", "000004", "-target-container", container},
		{"enqueue", "archive-entity", "-queue", queue, "-source", current.Name(), "-pk", "Sales", "-rk", "ghost", "-target-table", archive.Name()},
		{"enqueue", "archive-table", "-queue", queue, "-table", day.Name(), "-container", container, "-sealed"},
	}
	for _, s := range steps {
		if code, _, stderr := archiver(t, s...); code != 0 {
			t.Fatalf("%q: %d %s", s, code, stderr)
		}
	}
	code, out, stderr := archiver(t, "run", "-drain", "-allow-any", "-queue", queue)
	if code != app.ExitPoisoned || !strings.Contains(out, "processed 5") || !strings.Contains(out, "poisoned 1") {
		t.Fatalf("run -drain: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "table archived") {
		t.Fatalf("no progress in the logs:\n%s", stderr)
	}
	moved, err := archive.Collect(ctx, repo.Query{Filter: filter.PartitionKey("Sales")})
	if err != nil || len(moved) != 3 {
		t.Fatalf("archive holds %d employees (%v)", len(moved), err)
	}
	left, err := current.Collect(ctx, repo.Query{})
	if err != nil || len(left) != 1 || left[0].RowKey != "000003" {
		t.Fatalf("current holds %v (%v)", left, err)
	}
	if ok, _ := day.Exists(ctx); ok {
		t.Fatal("the archived day table still exists")
	}

	code, out, _ = archiver(t, "poison", "list", "-queue", queue)
	if code != 0 || !strings.Contains(out, "1 poison message") || !strings.Contains(out, "nothing to archive") || !strings.Contains(out, "ghost") {
		t.Fatalf("poison list: %d\n%s", code, out)
	}
	code, out, _ = archiver(t, "poison", "requeue", "-queue", queue)
	if code != 0 || !strings.Contains(out, "requeued 1") {
		t.Fatalf("poison requeue: %d\n%s", code, out)
	}
	// The restore job brings the day table back under another name.
	restored := name + "Back"
	if code, _, stderr := archiver(t, "enqueue", "restore-table", "-queue", queue, "-table", day.Name(), "-container", container, "-target", restored); code != 0 {
		t.Fatalf("enqueue restore: %s", stderr)
	}
	code, out, stderr = archiver(t, "run", "-drain", "-allow-any", "-queue", queue)
	if code != app.ExitPoisoned || !strings.Contains(out, "processed 1") || !strings.Contains(out, "poisoned 1") {
		t.Fatalf("second run -drain: exit %d\n%s\n%s", code, out, stderr)
	}
	back, _ := repo.New[codec.Entity](clients.Tables, restored, nil)
	t.Cleanup(func() { _ = back.DeleteTable(context.Background()) })
	got, err := back.Collect(ctx, repo.Query{})
	if err != nil || len(got) != 120 {
		t.Fatalf("restored table holds %d entities (%v)", len(got), err)
	}
}

// Hot/cold separation: archive-periods enqueues the day tables older than the cutoff
// (not the newer one), and the worker checks each claim against the entities' Timestamps.
func TestArchivePeriods(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	type SignIn struct {
		User string    `table:",pk"`
		ID   string    `table:",rk"`
		At   time.Time `table:"At"`
	}
	scheme := periodtable.Scheme{Prefix: testenv.TableName(t) + "Day", Period: periodtable.Daily}
	days, err := periodtable.New[SignIn](clients.Tables, scheme, "At", nil)
	if err != nil {
		t.Fatal(err)
	}
	for d := 1; d <= 3; d++ {
		for i := 0; i < 30; i++ {
			at := time.Date(2024, 6, d, 10, i, 0, 0, time.UTC)
			if err := days.Insert(ctx, &SignIn{User: fmt.Sprintf("u%d", i%3), ID: fmt.Sprintf("%d-%02d", d, i), At: at}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		all, _ := days.List(context.Background(), nil)
		for _, tb := range all {
			_ = days.Drop(context.Background(), tb)
		}
	})
	queue, container := testenv.QueueName(t), testenv.ContainerName(t)
	code, out, stderr := archiver(t, "enqueue", "archive-periods", "-queue", queue, "-prefix", scheme.Prefix,
		"-period", "daily", "-before", "2024-06-03", "-container", container)
	if code != 0 || !strings.Contains(out, "2 period table(s)") {
		t.Fatalf("enqueue archive-periods: %d\n%s\n%s", code, out, stderr)
	}
	// The day tables were written today, long after their days ended: their Timestamps
	// prove that something still writes them, whatever the period claim says. The worker
	// refuses both (poisoned at once, nothing exported, nothing deleted). The positive
	// path of period tables, whose Timestamps fit their period, is in patterns/consistency
	// (TestArchiveTableGenerations: a worker whose clock is days ahead).
	code, out, stderr = archiver(t, "run", "-drain", "-allow-any", "-queue", queue)
	if code != app.ExitPoisoned || !strings.Contains(out, "processed 0, failed 2, poisoned 2") || !strings.Contains(stderr, "after its period as the job claims it ended") {
		t.Fatalf("run -drain: %d\n%s\n%s", code, out, stderr)
	}
	left, err := days.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 3 {
		t.Fatalf("tables left: %+v, want all 3", left)
	}
	arch, err := tablearchive.New(clients, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, day := range []string{"20240601", "20240602"} {
		if m, err := arch.ReadManifest(ctx, container, scheme.Prefix+day); !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("manifest of %s: %+v %v, want none", day, m, err)
		}
	}
	if code, _, _ := archiver(t, "enqueue", "archive-periods", "-queue", queue, "-prefix", scheme.Prefix, "-period", "fortnightly", "-before", "2024-06-03", "-container", container); code != app.ExitUsage {
		t.Fatalf("a bad period: exit %d", code)
	}
}

// archiverAt runs the command against the connection string cs (TP_CONN).
func archiverAt(t *testing.T, cs string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut strings.Builder
	ctx := t.Context() // a run that never ends hangs until go test -timeout
	code := app.Main(ctx, append(args, "-connection-string-env", "TP_CONN"), &out, &errOut, func(k string) string {
		if k == "TP_CONN" {
			return cs
		}
		return ""
	})
	return code, out.String(), errOut.String()
}

// Bad jobs are refused before any request (exit 2), even when
// the storage cannot be reached; archive-periods refuses a cutoff that is in the future
// or inside the seal grace.
func TestBadJobsExitTwoBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: any request would fail, with exit 1.
	unreachable := "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;" +
		"BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;QueueEndpoint=http://127.0.0.1:1/devstoreaccount1;TableEndpoint=http://127.0.0.1:1/devstoreaccount1;"
	tomorrow := time.Now().Add(24 * time.Hour).UTC().Format("2006-01-02")
	recent := time.Now().Add(-30 * time.Minute).UTC().Format(time.RFC3339)
	for _, args := range [][]string{
		{"enqueue", "archive-entity", "-pk", "p", "-rk", "r", "-target-table", "Archive"},                         // no -source
		{"enqueue", "archive-entity", "-source", "Current", "-pk", "p/q", "-rk", "r", "-target-table", "Archive"}, // bad key
		{"enqueue", "archive-table", "-table", "Current", "-container", "cold"},                                   // not sealed
		{"enqueue", "archive-table", "-table", "Current", "-container", "cold", "-sealed", "-shards", "65"},       // more than MaxShards
		{"enqueue", "archive-table", "-table", "Current", "-container", "cold", "-sealed", "-shards", "-1"},
		{"enqueue", "archive-table", "-table", "Current", "-container", "cold", "-sealed", "-shards", "1"}, // splits nothing: omit -shards
		{"enqueue", "archive-table", "-table", "Current", "-container", "cold", "-sealed", "-shards", "0"},
		{"enqueue", "archive-table", "-table", "SignIns" + time.Now().UTC().Format("20060102"), "-container", "cold", "-period-prefix", "SignIns", "-period", "daily"},
		{"enqueue", "restore-table", "-table", "Current", "-container", "cold", "-generation", "../x"},
		{"enqueue", "archive-periods", "-prefix", "SignIns", "-period", "daily", "-before", tomorrow, "-container", "cold"},
		{"enqueue", "archive-periods", "-prefix", "SignIns", "-period", "hourly", "-before", recent, "-container", "cold"},
		{"sweep", "-table", "Current", "-container", "cold", "-older-than", "10m"}, // a running export's data
		{"sweep", "-container", "cold"},
	} {
		code, _, stderr := archiverAt(t, unreachable, args...)
		if code != app.ExitUsage {
			t.Errorf("%q: exit %d, want 2\n%s", args, code, stderr)
		}
	}
	// An unset connection string is said out loud.
	var out, errOut strings.Builder
	app.Main(t.Context(), []string{"enqueue", "archive-table", "-table", "Current", "-container", "cold"}, &out, &errOut, func(string) string { return "" })
	if !strings.Contains(errOut.String(), "no connection string") || !strings.Contains(errOut.String(), "AZURE_STORAGE_CONNECTION_STRING") {
		t.Errorf("no log line for the local-emulator default:\n%s", errOut.String())
	}
}

// archive-periods -dry-run lists and enqueues nothing; the jobs it enqueues carry the
// scheme, so the worker checks the seal again.
func TestArchivePeriodsDryRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	scheme := periodtable.Scheme{Prefix: testenv.TableName(t) + "Dry", Period: periodtable.Daily}
	days, err := periodtable.New[codec.Entity](clients.Tables, scheme, "At", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{time.Date(2024, 6, 1, 1, 0, 0, 0, time.UTC), time.Now()} {
		if err := days.Insert(ctx, &codec.Entity{PartitionKey: "u", RowKey: at.Format("20060102"), Properties: map[string]any{"At": at}}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		all, _ := days.List(context.Background(), nil)
		for _, tb := range all {
			if r, err := days.Table(tb); err == nil {
				_ = r.DeleteTable(context.Background())
			}
		}
	})
	queue := testenv.QueueName(t)
	code, out, stderr := archiver(t, "enqueue", "archive-periods", "-queue", queue, "-prefix", scheme.Prefix, "-period", "daily",
		"-before", time.Now().Add(-2*time.Hour).UTC().Format(time.RFC3339), "-container", "cold", "-dry-run")
	if code != 0 || !strings.Contains(out, "would enqueue archive-table "+scheme.Prefix+"20240601") || strings.Contains(out, time.Now().UTC().Format("20060102")) ||
		!strings.Contains(out, "1 period table(s)") {
		t.Fatalf("dry run: %d\n%s\n%s", code, out, stderr)
	}
	q := clients.Queues.NewQueueClient(queue)
	if _, err := q.GetProperties(ctx, nil); err == nil {
		t.Fatal("a dry run created the queue")
	}
}

// Poison list shows the original text of a malformed message.
func TestPoisonListShowsMalformedText(t *testing.T) {
	t.Parallel()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	queue := testenv.QueueName(t)
	q := clients.Queues.NewQueueClient(queue)
	if _, err := q.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = q.Delete(context.Background(), nil)
		_, _ = clients.Queues.NewQueueClient(queue+"-poison").Delete(context.Background(), nil)
	})
	if _, err := q.EnqueueMessage(t.Context(), "{not json, from a broken producer", nil); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := archiver(t, "run", "-drain", "-allow-any", "-queue", queue); code != app.ExitPoisoned || !strings.Contains(out, "poisoned 1") {
		t.Fatalf("run -drain: %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ := archiver(t, "poison", "list", "-queue", queue)
	if code != 0 || !strings.Contains(out, "(malformed)") || !strings.Contains(out, `"{not json, from a broken producer"`) {
		t.Fatalf("poison list: %d\n%s", code, out)
	}
}

// The human output of `archiver poison list` is for an operator's terminal, and the
// poisoned jobs are whoever-can-write-the-queue's input: a job id carrying terminal
// escapes (set the window title, clear the screen, hide the lines above) must never
// reach it raw: no raw control character from a queued job is in the listing, whichever
// field (malformed text, envelope id or kind) carries it.
func TestPoisonListPrintsNoRawControlCharacterFromAJob(t *testing.T) {
	t.Parallel()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	queue := testenv.QueueName(t)
	q := clients.Queues.NewQueueClient(queue)
	if _, err := q.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = q.Delete(context.Background(), nil)
		_, _ = clients.Queues.NewQueueClient(queue+"-poison").Delete(context.Background(), nil)
	})
	c, err := queueworker.NewClient(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	job := tablearchive.ArchiveTableJob{Table: "ghost", Container: "cold"} // invalid: neither period nor sealed
	if _, err := queueworker.Enqueue(t.Context(), c, tablearchive.KindArchiveTable, "job\x1b]0;pwned\x07\x1b[2J\x1b[1A", job, nil); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := archiver(t, "run", "-drain", "-allow-any", "-queue", queue); code != app.ExitPoisoned || !strings.Contains(out, "poisoned 1") {
		t.Fatalf("run -drain: %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ := archiver(t, "poison", "list", "-queue", queue)
	if code != 0 || !strings.Contains(out, "1 poison message") {
		t.Fatalf("poison list: %d\n%q", code, out)
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Fatalf("poison list prints a queued job's terminal escapes raw:\n%q", out)
	}
}
