package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// staffer is the guide's employee, indexed by email across partitions (copies in
// "email_<department>").
type staffer struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	First      string `table:"FirstName"`
	Email      string `table:"Email,omitempty"`
	ETag       string `table:",etag"`
}

var staffEmail = secondaryindex.Index[staffer]{Name: "email", Value: func(s *staffer) string { return s.Email }, Normalize: strings.ToLower}

// emailIndex builds the team's index on env: the archiver's queue and logger.
func emailIndex(table string) func(env *app.Env) (app.Index, error) {
	return func(env *app.Env) (app.Index, error) {
		return secondaryindex.NewInter(env.Clients.Tables, table, env.Queue, []secondaryindex.Index[staffer]{staffEmail},
			&secondaryindex.InterOptions{SafetyDelay: -1, Table: repo.Options{Logger: env.Logger}})
	}
}

// indexBed is a table of staff that predates its email index, and an archiver that knows
// the index as "employee-email".
type indexBed struct {
	t       *testing.T
	clients *account.Clients
	table   string
	queue   string
	ext     *app.Extensions
	cs      string
	x       *secondaryindex.Inter[staffer] // the same index, for the test's own checks
}

func newIndexBed(t *testing.T, cs string) *indexBed {
	t.Helper()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &indexBed{t: t, clients: clients, table: testenv.TableName(t), queue: testenv.QueueName(t), cs: cs}
	tb, err := repo.New[staffer](clients.Tables, b.table, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateIfNotExists(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tb.DeleteTable(context.Background()) })
	b.ext = &app.Extensions{Indexes: map[string]func(*app.Env) (app.Index, error){"employee-email": emailIndex(b.table)}}
	q, err := queueworker.NewClient(clients.Queues.NewQueueClient(b.queue), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.x, err = secondaryindex.NewInter(clients.Tables, b.table, q, []secondaryindex.Index[staffer]{staffEmail}, &secondaryindex.InterOptions{SafetyDelay: -1}); err != nil {
		t.Fatal(err)
	}
	return b
}

// archiver runs the team's archiver (MainWith with the bed's extensions).
func (b *indexBed) archiver(args ...string) (int, string, string) {
	b.t.Helper()
	var out, errOut strings.Builder
	getenv := func(k string) string {
		if k == "TP_CONN" {
			return b.cs
		}
		return ""
	}
	ctx := b.t.Context() // a run that never ends hangs until go test -timeout
	code := app.MainWith(ctx, append(args, "-queue", b.queue, "-connection-string-env", "TP_CONN"), &out, &errOut, getenv, b.ext)
	return code, out.String(), errOut.String()
}

// must runs the archiver and fails the test unless it exits 0.
func (b *indexBed) must(args ...string) (string, string) {
	b.t.Helper()
	code, out, stderr := b.archiver(args...)
	if code != 0 {
		b.t.Fatalf("%q: exit %d\n%s\n%s", args, code, out, stderr)
	}
	return out, stderr
}

// drain runs the worker until the queue is empty.
func (b *indexBed) drain() (string, string) {
	b.t.Helper()
	return b.must("run", "-drain", "-allow-tables", "NoTable", "-allow-containers", "none")
}

// report is one "index verify" or "index repair" log line.
type report struct {
	PK, Kind, Job                                             string
	Entities, Copies, Missing, Stale, Orphan, Conflict, Drift int
	Repaired                                                  int
	Samples                                                   []map[string]string
	line                                                      string
}

// reports parses the report lines of op from an archiver's log.
func reports(t *testing.T, stderr, op string) map[string]report {
	t.Helper()
	out := map[string]report{}
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.Contains(line, "\tindex "+op+"\t") {
			continue
		}
		i := strings.Index(line, "{")
		if i < 0 {
			t.Fatalf("report line without fields: %q", line)
		}
		var r report
		if err := json.Unmarshal([]byte(line[i:]), &r); err != nil {
			t.Fatalf("report line %q: %v", line, err)
		}
		r.line = line
		out[r.PK] = r
	}
	return out
}

func (b *indexBed) seed(depts map[string]int) {
	b.t.Helper()
	raw, err := repo.New[staffer](b.clients.Tables, b.table, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	var all []*staffer
	for dept, n := range depts {
		for i := 1; i <= n; i++ {
			all = append(all, &staffer{Department: dept, ID: fmt.Sprintf("%06d", i), First: "F", Email: fmt.Sprintf("%s%d@contoso.com", strings.ToLower(dept), i)})
		}
	}
	if err := raw.BulkWrite(b.t.Context(), all, nil); err != nil {
		b.t.Fatal(err)
	}
}

// Index maintenance end to end through the team's archiver, in-process: backfill an
// email index onto a table that already holds staff, inject each kind of drift (a
// deleted copy, a stale copy, an orphan), verify finds it (logged as counts and keys,
// no email), repair fixes it, and a second verify finds nothing.
func TestIndexMaintenanceThroughMainWith(t *testing.T) {
	t.Parallel()
	b := newIndexBed(t, testenv.ConnectionString(t))
	ctx := t.Context()
	b.seed(map[string]int{"Sales": 6, "HR": 3})

	if out, _ := b.must("enqueue", "backfill", "-index", "employee-email"); !strings.Contains(out, "enqueued backfill of index employee-email (every partition)") {
		t.Fatalf("enqueue backfill: %q", out)
	}
	if out, stderr := b.drain(); !strings.Contains(out, "processed 2, failed 0, poisoned 0") {
		t.Fatalf("backfill run: %s\n%s", out, stderr)
	}
	for pk, n := range map[string]int{"Sales": 6, "HR": 3} {
		if r, err := b.x.Verify(ctx, pk, nil); err != nil || r.Drift() != 0 || r.Entities != n {
			t.Fatalf("after backfill, %s: %+v %v", pk, r, err)
		}
	}

	raw, err := repo.New[codec.Entity](b.clients.Tables, b.table, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Missing: sales1's copy deleted by hand.
	if err := raw.Delete(ctx, "email_Sales", keys.Join("sales1@contoso.com", "000001"), nil); err != nil {
		t.Fatal(err)
	}
	// Stale: sales2's copy edited by hand.
	c2, err := raw.Get(ctx, "email_Sales", keys.Join("sales2@contoso.com", "000002"))
	if err != nil {
		t.Fatal(err)
	}
	c2.Properties["FirstName"] = "Tampered"
	if err := raw.Upsert(ctx, &c2, nil); err != nil {
		t.Fatal(err)
	}
	// Orphan: a copy of an employee that does not exist.
	if err := raw.Insert(ctx, &codec.Entity{PartitionKey: "email_Sales", RowKey: keys.Join("ghost@contoso.com", "000099"),
		Properties: map[string]any{"FirstName": "Ghost", "Email": "ghost@contoso.com"}}); err != nil {
		t.Fatal(err)
	}

	b.must("enqueue", "verify", "-index", "employee-email")
	_, stderr := b.drain()
	got := reports(t, stderr, "verify")
	sales, hr := got["Sales"], got["HR"]
	if len(got) != 2 || sales.Missing != 1 || sales.Stale != 1 || sales.Orphan != 1 || sales.Drift != 3 || sales.Entities != 6 || hr.Drift != 0 || hr.Entities != 3 {
		t.Fatalf("verify reports %+v\n%s", got, stderr)
	}
	drifts := map[string]string{}
	for _, s := range sales.Samples {
		drifts[s["rk"]] = s["drift"]
	}
	if fmt.Sprint(drifts) != fmt.Sprint(map[string]string{"000001": "missing", "000002": "stale", "000099": "orphan"}) {
		t.Fatalf("samples %v", sales.Samples)
	}
	if strings.Contains(sales.line, "contoso.com") || strings.Contains(sales.line, "Tampered") {
		t.Fatalf("the verify line carries data, not only keys: %s", sales.line)
	}
	// Verify wrote nothing: the drift is still there.
	if r, err := b.x.Verify(ctx, "Sales", nil); err != nil || r.Drift() != 3 {
		t.Fatalf("verify job changed the index: %+v %v", r, err)
	}

	b.must("enqueue", "repair", "-index", "employee-email", "-pk", "Sales")
	_, stderr = b.drain()
	if r := reports(t, stderr, "repair")["Sales"]; r.Drift != 3 || r.Repaired != 3 {
		t.Fatalf("repair report %+v\n%s", r, stderr)
	}
	for pk, n := range map[string]int{"Sales": 6, "HR": 3} {
		if r, err := b.x.Verify(ctx, pk, nil); err != nil || r.Drift() != 0 || r.Entities != n {
			t.Fatalf("after repair, %s: %+v %v", pk, r, err)
		}
	}
	if c, err := raw.Get(ctx, "email_Sales", keys.Join("sales2@contoso.com", "000002")); err != nil || c.Properties["FirstName"] != "F" {
		t.Fatalf("stale copy not rewritten: %+v %v", c, err)
	}
	b.must("enqueue", "verify", "-index", "employee-email", "-pk", "Sales", "-pk", "HR")
	_, stderr = b.drain()
	if got := reports(t, stderr, "verify"); len(got) != 2 || got["Sales"].Drift != 0 || got["HR"].Drift != 0 {
		t.Fatalf("verify after repair: %+v", got)
	}
}

// Bad command lines of the index commands exit 2 before any request reaches the storage
// (counted at the fault proxies): an unknown index, a missing -index, a bad -pk, a bad
// flag, the stock archiver (no indexes), and extensions with a bad index name.
func TestIndexCommandsRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := newIndexBed(t, ps.ConnectionString)
	count := func() int { return ps.Table.Count() + ps.Queue.Count() + ps.Blob.Count() }
	cases := []struct {
		name string
		ext  *app.Extensions
		args []string
		want string // in stderr, when set
	}{
		{"unknown index", b.ext, []string{"enqueue", "verify", "-index", "employee-phone"}, "knows employee-email"},
		{"no -index", b.ext, []string{"enqueue", "repair"}, "-index NAME is required"},
		{"bad -pk", b.ext, []string{"enqueue", "backfill", "-index", "employee-email", "-pk", "a/b"}, "forbidden character"},
		{"an index partition as -pk", b.ext, []string{"enqueue", "repair", "-index", "employee-email", "-pk", "email_Sales"}, "index partitions"},
		{"empty -pk", b.ext, []string{"enqueue", "backfill", "-index", "employee-email", "-pk", ""}, "not empty"},
		{"bad flag", b.ext, []string{"enqueue", "verify", "-index", "employee-email", "-frobnicate"}, "frobnicate"},
		{"stray argument", b.ext, []string{"enqueue", "repair", "-index", "employee-email", "Sales"}, "unexpected argument"},
		{"stock archiver", nil, []string{"enqueue", "verify", "-index", "employee-email"}, "has no indexes"},
		{"bad index name", &app.Extensions{Indexes: map[string]func(*app.Env) (app.Index, error){"bad name": emailIndex(b.table)}}, []string{"enqueue", "verify", "-index", "bad name"}, "want 1 to 63"},
		{"nil builder", &app.Extensions{Indexes: map[string]func(*app.Env) (app.Index, error){"x": nil}}, []string{"run", "-drain", "-allow-any"}, "no builder"},
		{"companions of a bad table name", &app.Extensions{Companions: func(env *app.Env) (map[string][]consistency.Companion, error) {
			ix, err := env.Index("employee-email")
			if ix != nil || err == nil {
				return nil, fmt.Errorf("Env.Index of an unknown index: %v %v", ix, err)
			}
			return map[string][]consistency.Companion{"bad_name": nil}, nil
		}}, []string{"run", "-drain", "-allow-any"}, "bad_name"},
	}
	for _, c := range cases {
		before := count()
		b.ext = c.ext
		code, _, stderr := b.archiver(c.args...)
		if code != app.ExitUsage || !strings.Contains(stderr, "archiver:") || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2", c.name, code, stderr)
		}
		if n := count() - before; n != 0 {
			t.Errorf("%s: %d requests sent", c.name, n)
		}
	}
	var out strings.Builder
	app.Main(t.Context(), []string{"help"}, &out, &out, func(string) string { return "" })
	if !strings.Contains(out.String(), "This archiver has no indexes") {
		t.Errorf("stock help does not say it has no indexes:\n%s", out.String())
	}
	out.Reset()
	app.MainWith(t.Context(), []string{"help"}, &out, &out, func(string) string { return "" },
		&app.Extensions{Indexes: map[string]func(*app.Env) (app.Index, error){"employee-email": emailIndex(b.table)}})
	if !strings.Contains(out.String(), "Indexes of this archiver: employee-email") {
		t.Errorf("help of a team's archiver does not name its index:\n%s", out.String())
	}
}

// Forged verify and repair jobs (the queue is untrusted: a partition the index cannot
// have, an index partition, a resume point on a job that takes its partition whole, a
// payload that does not decode) are cancelled into the poison queue, and none of them
// reads or writes the index: nothing is reported and nothing is written.
func TestForgedIndexJobsArePoisoned(t *testing.T) {
	t.Parallel()
	b := newIndexBed(t, testenv.ConnectionString(t))
	ctx := t.Context()
	b.seed(map[string]int{"Sales": 3})
	q, err := queueworker.NewClient(b.clients.Queues.NewQueueClient(b.queue), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Queue().Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	forged := []any{
		map[string]any{"pk": ""},
		map[string]any{"pk": "Sales", "after": "000001"},
		map[string]any{"pk": "email_Sales"},
		map[string]any{"pk": "a#b"},
		map[string]any{"pk": 42},
	}
	for _, kind := range []string{b.x.VerifyKind(), b.x.RepairKind()} {
		for _, p := range forged {
			if _, err := queueworker.Enqueue(ctx, q, kind, "", p, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, out, stderr := b.archiver("run", "-drain", "-allow-tables", "NoTable", "-allow-containers", "none")
	if code != app.ExitPoisoned {
		t.Fatalf("run -drain: exit %d, want %d (jobs poisoned)\n%s\n%s", code, app.ExitPoisoned, out, stderr)
	}
	n := 2 * len(forged)
	if want := fmt.Sprintf("processed 0, failed %d, poisoned %d", n, n); !strings.Contains(out, want) {
		t.Fatalf("run: %q, want %q\n%s", out, want, stderr)
	}
	if len(reports(t, stderr, "verify"))+len(reports(t, stderr, "repair")) != 0 {
		t.Fatalf("a forged job was run:\n%s", stderr)
	}
	if r, err := b.x.Verify(ctx, "Sales", nil); err != nil || r.Missing != 3 || r.Copies != 0 {
		t.Fatalf("a forged repair wrote copies: %+v %v", r, err)
	}
}

// Extensions with a nil entry: a builder that returns a typed nil index (a
// nil *secondaryindex.Inter in the Index interface, no error) is a bad configuration. The
// archiver must refuse it as such (exit 2, before any request), not panic.
func TestExtensionsWithATypedNilIndexAreRefused(t *testing.T) {
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

// The queue is created only when the first enqueue finds none: `enqueue
// verify` of every partition of an index whose table does not exist fails (nothing to
// verify), and must leave the account as it was: no job queue created for a command
// that enqueued nothing.
func TestEnqueueIndexOfAMissingTableCreatesNoQueue(t *testing.T) {
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

// Nothing secret in output or errors: `enqueue verify|repair|backfill` of a
// team's index against an unreachable account whose connection string carries a key and
// a SAS: the failure is reported, and neither secret appears in stdout or stderr (the
// index's listing, the queue's enqueue and its creation all fail).
func TestEnqueueIndexOfAnUnreachableAccountLeaksNoSecret(t *testing.T) {
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
