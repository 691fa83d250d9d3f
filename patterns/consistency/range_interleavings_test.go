package consistency

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"go.uber.org/zap"
)

// deleteBatchOf matches the entity group transactions that delete entities of table (the
// range move's delete step; its copies to a target table are inserts and updates).
func deleteBatchOf(table string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		if !faultproxy.IsBatch(r) {
			return false
		}
		body, _ := io.ReadAll(r.Body)
		return strings.Contains(string(body), "DELETE ") && strings.Contains(string(body), "/"+table+"(")
	}
}

// directClients are the account's clients, bypassing the proxies.
func directClients(t *testing.T) *account.Clients {
	t.Helper()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return clients
}

// directTable is the table name on the account's direct clients (bypassing the proxies).
func directTable(t *testing.T, name string) *repo.Table[codec.Entity] {
	t.Helper()
	tb, err := repo.New[codec.Entity](directClients(t).Tables, name, &repo.Options{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// A writer updates an entity between the copy and the delete: the delete transaction is
// held at the proxy, the application writes version 2 of one entity, then the held
// transaction goes on. Its If-Match on the copied ETag fails, nothing of it is deleted,
// and the batch starts over: version 2 ends archived and the source empty. Table and blob
// targets.
func TestRangeWriterBetweenCopyAndDelete(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"table", "blob"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			ps := testenv.Proxies(t)
			b := setup(t, ps.ConnectionString)
			direct := directTable(t, b.current.Name())
			want := b.loadRange(t, []string{"Sales"}, 40)
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
			container := ""
			if target == "blob" {
				container = testenv.ContainerName(t)
				job.TargetTable, job.TargetContainer = "", container
				t.Cleanup(func() { _, _ = b.clients.Blobs.DeleteContainer(context.Background(), container, nil) })
			}
			p := ps.Table.PauseAt("delete", deleteBatchOf(b.current.Name()), 1)
			t.Cleanup(p.Release)
			done := make(chan error, 1)
			go func() { _, err := b.a.ArchiveRange(b.ctx, job); done <- err }()
			if err := p.Wait(b.ctx); err != nil {
				t.Fatal(err)
			}
			v2 := rangeEntity("Sales", 7, 2)
			if err := direct.Update(b.ctx, v2, &repo.UpdateOptions{Unconditional: true}); err != nil {
				t.Fatal(err)
			}
			p.Release()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			want[RangeKey{"Sales", v2.RowKey}] = v2.ETag
			if target == "table" {
				b.assertRangeArchived(t, want, nil)
				got, err := b.archive.Get(b.ctx, "Sales", v2.RowKey)
				if err != nil || got.Properties["Version"] != int32(2) {
					t.Fatalf("archived %v: %v", got.Properties, err)
				}
				return
			}
			got, err := b.a.ReadArchivedEntity(b.ctx, container, b.current.Name(), "Sales", v2.RowKey)
			if err != nil || got.Properties["Version"] != int32(2) {
				t.Fatalf("archived %v: %v", got, err)
			}
			if left, err := direct.Collect(b.ctx, repo.Query{}); err != nil || len(left) != 0 {
				t.Fatalf("source: %d left: %v", len(left), err)
			}
		})
	}
}

// The response of a transaction is lost after the service committed it: the copy
// transaction (its retry meets 409: outcome unknown) or the delete transaction (its retry
// meets 404). Neither is taken for success or for failure: the batch re-reads, finds the
// copies recording the source versions, or the source gone, and ends with every entity
// archived once and the source empty.
func TestRangeResponseLostAfterCommit(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"copy", "delete"} {
		t.Run(which, func(t *testing.T) {
			t.Parallel()
			ps := testenv.Proxies(t)
			b := setup(t, ps.ConnectionString)
			want := b.loadRange(t, []string{"Sales", "Ops"}, 150)
			var n atomic.Int32
			match := func(r *http.Request) bool {
				if !faultproxy.IsBatch(r) {
					return false
				}
				body, _ := io.ReadAll(r.Body)
				isDelete := strings.Contains(string(body), "DELETE ")
				return isDelete == (which == "delete") && n.Add(1) == 2
			}
			ps.Table.AddRule(faultproxy.Rule{Name: "lost", Match: match, Action: faultproxy.DropAfterForward()})
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKeyFrom: "A", PartitionKeyTo: "Z", TargetTable: b.archive.Name()}
			if _, err := b.a.ArchiveRange(b.ctx, job); err != nil {
				t.Fatal(err)
			}
			if ps.Table.Fired("lost") != 1 {
				t.Fatalf("the rule fired %d times", ps.Table.Fired("lost"))
			}
			b.assertRangeArchived(t, want, nil)
		})
	}
}

// Two deliveries of one job at once: the job is enqueued twice and both deliveries are
// held at their first scan until both have scanned, so they move the same batches
// concurrently; and, from code, two runs at once. Every entity ends archived once. Pages
// of 150 keys make both ranges span pages (and the first, partitions within a page).
func TestRangeTwoDeliveriesAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	const page = 150
	b.a.seams.pageSize = page
	want := b.loadRange(t, []string{"a1", "a2", "a3"}, 100)
	c, queue := rangeClient(t, b)
	a := rangeArchiver(t, b, c, nil)
	a.seams.pageSize = page
	var scans atomic.Int32
	both := make(chan struct{})
	a.seams.step = func(_, step string) error {
		if step == "scanned" {
			switch scans.Add(1) {
			case 2:
				close(both)
			case 1:
				<-both // a second delivery that never scans hangs until go test -timeout
			}
		}
		return nil
	}
	w := rangeWorker(t, b, queue, a)
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKeyFrom: "a1", PartitionKeyTo: "a4", TargetTable: b.archive.Name()}
	for range 2 {
		if err := EnqueueArchiveRange(b.ctx, c, job); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, w)
	b.assertRangeArchived(t, want, nil)
	if s := w.Stats(); s.Failed != 0 || s.Poisoned != 0 {
		t.Fatalf("worker: %+v", s)
	}

	// From code: two runs of one job at once.
	more := b.loadRange(t, []string{"b1"}, 200)
	job2 := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "b1", TargetTable: b.archive.Name()}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = b.a.ArchiveRange(b.ctx, job2) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for k, v := range more {
		want[k] = v
	}
	b.assertRangeArchived(t, want, nil)
}

// Bad jobs, from code, from the enqueue and from the queue (a forged message, a
// continuation pointing outside its range): refused with ErrInvalidInput (or
// ErrNotAllowed) before any table or blob request; the worker poisons the forged
// messages without touching storage. A value that looks like filter text is a literal.
func TestRangeBadInputRefusedWithoutRequest(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	ps.Table.Reset() // the tables setup created
	src, dst := b.current.Name(), b.archive.Name()
	ok := ArchiveRangeJob{Source: src, PartitionKey: "Sales", TargetTable: dst}
	bad := map[string]func(j *ArchiveRangeJob){
		"no selection":     func(j *ArchiveRangeJob) { j.PartitionKey = "" },
		"bad source":       func(j *ArchiveRangeJob) { j.Source = "no-dash" },
		"target is source": func(j *ArchiveRangeJob) { j.TargetTable = strings.ToUpper(src) },
		"two targets":      func(j *ArchiveRangeJob) { j.TargetContainer = "cold" },
		"no target":        func(j *ArchiveRangeJob) { j.TargetTable = "" },
		"bad container":    func(j *ArchiveRangeJob) { j.TargetTable, j.TargetContainer = "", "Cold!" },
		"pk and pk range":  func(j *ArchiveRangeJob) { j.PartitionKeyFrom = "A" },
		"rk bounds no pk":  func(j *ArchiveRangeJob) { j.PartitionKey, j.PartitionKeyFrom, j.RowKeyFrom = "", "A", "1" },
		"empty rk range":   func(j *ArchiveRangeJob) { j.RowKeyFrom, j.RowKeyTo = "5", "5" },
		"empty pk range":   func(j *ArchiveRangeJob) { j.PartitionKey, j.PartitionKeyFrom, j.PartitionKeyTo = "", "b", "a" },
		"bad key":          func(j *ArchiveRangeJob) { j.PartitionKey = "a/b" },
		"injected name": func(j *ArchiveRangeJob) {
			j.Where = []filter.Condition{{Property: "N eq 1 or Age", Op: "eq", Value: "1"}}
		},
		"key in where": func(j *ArchiveRangeJob) { j.Where = []filter.Condition{{Property: "RowKey", Op: "gt", Value: "1"}} },
		"bad op":       func(j *ArchiveRangeJob) { j.Where = []filter.Condition{{Property: "N", Op: "or", Value: "1"}} },
		"bad type": func(j *ArchiveRangeJob) {
			j.Where = []filter.Condition{{Property: "N", Op: "eq", Type: "Edm.Raw", Value: "1"}}
		},
		"bad int": func(j *ArchiveRangeJob) {
			j.Where = []filter.Condition{{Property: "N", Op: "eq", Type: "Edm.Int32", Value: "1 or true"}}
		},
		"NaN": func(j *ArchiveRangeJob) {
			j.Where = []filter.Condition{{Property: "N", Op: "eq", Type: "Edm.Double", Value: "NaN"}}
		},
		"too many conditions": func(j *ArchiveRangeJob) { j.Where = make([]filter.Condition, MaxRangeConditions+1) },
		"checkpoint other pk": func(j *ArchiveRangeJob) { j.After = &RangeKey{PartitionKey: "Ops", RowKey: "1"} },
		"checkpoint below":    func(j *ArchiveRangeJob) { j.RowKeyFrom, j.After = "5", &RangeKey{PartitionKey: "Sales", RowKey: "4"} },
		// A checkpoint is a position, not an address: a key the job cannot address (a '#',
		// an empty PartitionKey) may be one (checkPosition); one that is not text may not.
		"checkpoint bad key":    func(j *ArchiveRangeJob) { j.After = &RangeKey{PartitionKey: "Sales", RowKey: "a\xffb"} },
		"checkpoint above pkTo": func(j *ArchiveRangeJob) { j.PartitionKey, j.PartitionKeyTo, j.After = "", "m", &RangeKey{"n", ""} },
	}
	c, err := queueworker.NewClient(b.clients.Queues.NewQueueClient(testenv.QueueName(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, mutate := range bad {
		job := ok
		mutate(&job)
		if err := job.Validate(); !errors.Is(err, repo.ErrInvalidInput) {
			t.Fatalf("%s: Validate: %v", name, err)
		}
		if _, err := b.a.ArchiveRange(b.ctx, job); !errors.Is(err, repo.ErrInvalidInput) {
			t.Fatalf("%s: ArchiveRange: %v", name, err)
		}
		if err := EnqueueArchiveRange(b.ctx, c, job); !errors.Is(err, repo.ErrInvalidInput) {
			t.Fatalf("%s: EnqueueArchiveRange: %v", name, err)
		}
	}
	strict, err := New(b.clients, &Options{Retry: fastRetry(), AllowedTablePrefixes: []string{"Allowed"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := strict.ArchiveRange(b.ctx, ok); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("outside the allowlist: %v", err)
	}
	if n := ps.Table.Count() + ps.Queue.Count() + ps.Blob.Count(); n != 0 {
		t.Fatalf("%d requests sent for bad jobs", n)
	}

	// Forged messages through the worker: poisoned, no table request.
	queue := testenv.QueueName(t)
	w, wc := newWorker(t, b, queue, b.a)
	forged := ok
	forged.After = &RangeKey{PartitionKey: "Payroll", RowKey: "0"}
	if _, err := queueworker.Enqueue(b.ctx, wc, KindArchiveRange, "forged", forged, nil); err != nil {
		t.Fatal(err)
	}
	raw := map[string]any{"source": src, "targetTable": dst, "where": []map[string]string{{"property": "true or 1", "op": "eq", "value": "1"}}}
	if _, err := queueworker.Enqueue(b.ctx, wc, KindArchiveRange, "raw", raw, nil); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	if s := w.Stats(); s.Poisoned != 2 {
		t.Fatalf("worker: %+v", s)
	}
	if n := ps.Table.Count(); n != 0 {
		t.Fatalf("%d table requests for forged messages", n)
	}

	// A value shaped like filter text is one string literal: it matches nothing.
	if err := b.current.Insert(b.ctx, rangeEntity("Sales", 1, 1)); err != nil {
		t.Fatal(err)
	}
	lit := ok
	lit.Where = []filter.Condition{{Property: "Name", Op: "eq", Value: "x' or PartitionKey ne '"}}
	rep, err := b.a.ArchiveRange(b.ctx, lit)
	if err != nil || rep.Moved != 0 || rep.Scanned != 0 {
		t.Fatalf("literal: %+v %v", rep, err)
	}
	if _, err := b.current.Get(b.ctx, "Sales", fmt.Sprintf("%06d", 1)); err != nil {
		t.Fatal(err)
	}
}

// The keys a scan returns are untrusted: one outside the job's range, before its
// checkpoint, repeated, out of order or not text stops the page before anything is
// moved, so that a continuation never moves backwards or outside the selection. A key
// inside the range that the job cannot address (here a '#') is reported, not moved, and
// does not stop the page: such a key is still a position the continuation can resume
// after (TestRangeEmptyPartitionKey). Valid keys are split into batches of at most 100 keys
// of one partition.
func TestRangeScanKeysUntrusted(t *testing.T) {
	t.Parallel()
	job := ArchiveRangeJob{Source: "Current", PartitionKeyFrom: "b", PartitionKeyTo: "d", TargetTable: "Archive",
		After: &RangeKey{PartitionKey: "b", RowKey: "5"}}
	plan, err := job.plan()
	if err != nil {
		t.Fatal(err)
	}
	keys := func(ks ...string) []codec.Entity {
		var out []codec.Entity
		for _, k := range ks {
			pk, rk, _ := strings.Cut(k, "/")
			out = append(out, codec.Entity{PartitionKey: pk, RowKey: rk})
		}
		return out
	}
	for name, found := range map[string][]codec.Entity{
		"below the range":       keys("a/9"),
		"at or above pkTo":      keys("b/6", "d/0"),
		"before the checkpoint": keys("b/4"),
		"the checkpoint":        keys("b/5"),
		"repeated":              keys("b/6", "b/6"),
		"out of order":          keys("c/1", "b/9"),
		"not UTF-8":             keys("c/a\xffb"),
		"over 1 KiB of UTF-16":  keys("c/" + strings.Repeat("\U0001F600", 257)),
	} {
		if _, err := plan.batches(found, &skipped{keys: map[RangeKey]bool{}, log: zap.NewNop()}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	skip := &skipped{keys: map[RangeKey]bool{}, log: zap.NewNop()}
	got, err := plan.batches(keys("c/a#b", "c/b"), skip)
	if err != nil || len(got) != 1 || len(got[0].rks) != 1 || got[0].rks[0] != "b" || !slices.Equal(skip.list(), []RangeKey{{"c", "a#b"}}) {
		t.Fatalf("a key the job cannot address: batches %+v, skipped %v, %v", got, skip.list(), err)
	}
	var ok []string
	for i := 0; i < 150; i++ {
		ok = append(ok, fmt.Sprintf("b/%03d", 600+i))
	}
	ok = append(ok, "c/0", "c/1")
	got, err = plan.batches(keys(ok...), skip)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(got[0].rks) != 100 || len(got[1].rks) != 50 || got[2].pk != "c" || len(got[2].rks) != 2 {
		t.Fatalf("batches: %d", len(got))
	}
}

// The real service may end a page early, even empty, with a continuation (Azurite never
// does): emulated at the proxy with pages of 7 and an empty first page, the scan, the
// target read and the source read of each batch page through, and a partition of 150
// entities with a Where that selects 120 (a batch of 100 and one of 20) ends with exactly
// those archived.
func TestRangeArchiveShortPages(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	all := b.loadRange(t, []string{"Sales"}, 150)
	ps.Table.EmulatePaging(7, true)
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name(),
		Where: []filter.Condition{{Property: "N", Op: "lt", Type: "Edm.Int32", Value: "120"}}}
	rep, err := b.a.ArchiveRange(b.ctx, job)
	if err != nil || rep.Moved != 120 {
		t.Fatalf("moved %d: %v", rep.Moved, err)
	}
	want, keep := map[RangeKey]string{}, map[RangeKey]bool{}
	for k, etag := range all {
		if k.RowKey < "000120" {
			want[k] = etag
		} else {
			keep[k] = true
		}
	}
	ps.Table.EmulatePaging(0, false)
	b.assertRangeArchived(t, want, keep)
}

// doc.go's limit, tested: an entity that stops matching the job's filter between its copy
// and its delete stays in the source at its new version (never deleted), and its older
// copy stays in the target; every other selected entity is archived.
func TestRangeEntityLeavesFilterMidMove(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	direct := directTable(t, b.current.Name())
	all := b.loadRange(t, []string{"Sales"}, 20)
	p := ps.Table.PauseAt("delete", deleteBatchOf(b.current.Name()), 1)
	t.Cleanup(p.Release)
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name(),
		Where: []filter.Condition{{Property: "Version", Op: "eq", Type: "Edm.Int32", Value: "1"}}}
	done := make(chan error, 1)
	go func() { _, err := b.a.ArchiveRange(b.ctx, job); done <- err }()
	if err := p.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	v2 := rangeEntity("Sales", 7, 2)
	if err := direct.Update(b.ctx, v2, &repo.UpdateOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	p.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := direct.Get(b.ctx, "Sales", v2.RowKey)
	if err != nil || got.ETag != v2.ETag {
		t.Fatalf("the entity that left the filter: %v (etag %q, want %q)", err, got.ETag, v2.ETag)
	}
	cp, err := b.archive.Get(b.ctx, "Sales", v2.RowKey)
	if err != nil || cp.Properties["Version"] != int32(1) || cp.Properties[SourceETagProperty] != all[RangeKey{"Sales", v2.RowKey}] {
		t.Fatalf("its older copy: %v %v", cp.Properties, err)
	}
	left, err := direct.Collect(b.ctx, repo.Query{})
	if err != nil || len(left) != 1 {
		t.Fatalf("source holds %d: %v", len(left), err)
	}
}
