package indexentity

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Verify and repair as jobs, for option 2 and for option 3 (a TableStore): after a
// backfill job, drift written around the index (missing, stale, orphan) is reported by a
// verify job as counts and keys only, and fixed by a repair job delivered twice; forged
// jobs are poisoned and run nothing.
func TestVerifyRepairJobs(t *testing.T) {
	t.Parallel()
	for _, option := range []string{"same partition", "eventual"} {
		t.Run(option, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			b.seed("Sales", 40)
			q := b.queue()
			core, logs := observer.New(zapcore.InfoLevel)
			tbl := must(repo.New[Employee](b.Clients.Tables, b.Table, &repo.Options{Retry: fast, Logger: zap.New(core)}))
			var (
				register                 func(*queueworker.Registry) error
				backfill, verify, repair func(...string) error
				verifyKind, repairKind   string
				check                    verifier
			)
			if option == "same partition" {
				x, err := NewSamePartition(tbl, "LastName", lastName, &SamePartitionOptions{Queue: q})
				if err != nil {
					t.Fatal(err)
				}
				register, check, verifyKind, repairKind = x.Register, x, x.VerifyKind(), x.RepairKind()
				backfill = func(p ...string) error { return x.StartBackfill(b.Ctx, p...) }
				verify = func(p ...string) error { return x.StartVerify(b.Ctx, p...) }
				repair = func(p ...string) error { return x.StartRepair(b.Ctx, p...) }
			} else {
				x, err := NewEventual(tbl, "LastName", lastName, b.tableStore(0), q, nil)
				if err != nil {
					t.Fatal(err)
				}
				register, check, verifyKind, repairKind = x.Register, x, x.VerifyKind(), x.RepairKind()
				backfill = func(p ...string) error { return x.StartBackfill(b.Ctx, p...) }
				verify = func(p ...string) error { return x.StartVerify(b.Ctx, p...) }
				repair = func(p ...string) error { return x.StartRepair(b.Ctx, p...) }
			}
			w := b.Worker(q, register)
			if err := backfill(); err != nil {
				t.Fatal(err)
			}
			testbed.Drain(t, w)
			b.clean(check, "Sales", 40)
			b.injectDrift("Sales")

			if err := verify(); err != nil {
				t.Fatal(err)
			}
			testbed.Drain(t, w)
			lines := logs.FilterMessage("index verify").All()
			if len(lines) != 1 {
				t.Fatalf("%d verify lines: %+v", len(lines), logs.All())
			}
			f := lines[0].ContextMap()
			if f["pk"] != "Sales" || f["missing"] != int64(1) || f["stale"] != int64(1) || f["orphan"] != int64(1) || f["entities"] != int64(40) {
				t.Fatalf("verify line %v", f)
			}
			if s := fmt.Sprint(f["samples"]); strings.Contains(s, "Renamed") || strings.Contains(s, "Last") || !strings.Contains(s, "900000") {
				t.Fatalf("samples %s: want keys only", s)
			}

			// Forged jobs: poisoned before any work.
			for _, p := range []any{map[string]string{"pk": ""}, map[string]string{"pk": "Sales", "after": "000001"}, map[string]string{"pk": "a\\b"}} {
				for _, kind := range []string{verifyKind, repairKind} {
					if _, err := queueworker.Enqueue(b.Ctx, q, kind, "", p, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			// The repair job twice: a duplicate is harmless.
			if err := repair("Sales"); err != nil {
				t.Fatal(err)
			}
			if err := repair("Sales"); err != nil {
				t.Fatal(err)
			}
			before := w.Stats()
			testbed.Drain(t, w)
			after := w.Stats()
			if p := after.Poisoned - before.Poisoned; p != 6 {
				t.Fatalf("%d poisoned, want the 6 forged jobs", p)
			}
			if p := after.Processed - before.Processed; p != 2 {
				t.Fatalf("%d processed, want the 2 repair deliveries", p)
			}
			if n := len(logs.FilterMessage("index verify").All()); n != 1 {
				t.Fatalf("a forged verify ran: %d lines", n)
			}
			b.clean(check, "Sales", 40)
		})
	}
}

// SamePartition.Repair (and so its repair job) keeps its promise "Repair is idempotent and
// every write conditional on what it read, so duplicated and concurrent jobs are
// harmless". An orphan entry (its entity deleted around the index) is repaired by
// relist, which reads the entity (gone) and then the value's pages. The page read is held
// at the proxy; meanwhile a live Insert re-creates the entity under the orphan's value
// (it finds its id listed and guards the page). Released, the page read sees the guarded
// page, and the removal, conditional only on that page's ETag, unlists a live entity:
// nothing in the transaction says "the entity is still gone".
func TestSamePartitionRepairNeverUnlistsEntityReturningBeforePageRead(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	direct := must(repo.New[Employee](b.Direct.Tables, b.Table, &repo.Options{Retry: fast}))
	live := must(NewSamePartition(direct, "LastName", lastName, nil))
	for _, id := range []string{"000001", "000002"} {
		if err := live.Insert(b.Ctx, emp("Sales", id, "Jones")); err != nil {
			t.Fatal(err)
		}
	}
	if err := direct.Delete(b.Ctx, "Sales", "000002", nil); err != nil { // around the index
		t.Fatal(err)
	}
	ix := b.samePartition(nil) // through the proxy
	// Verify's two queries (entities, index pages), then relist's Get of 000002 (404),
	// then relist's read of Jones' pages: the third query.
	ps := b.tableProxy().PauseAt("relist page read", faultproxy.IsListEntities, 3)
	type result struct {
		r   *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := ix.Repair(b.Ctx, "Sales", nil)
		done <- result{r, err}
	}()
	testbed.WaitHeld(t, ps)
	if err := live.Insert(b.Ctx, emp("Sales", "000002", "Jones")); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	res := <-done
	t.Logf("repair: %+v %v", res.r, res.err)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if ids := must(ix.IDs(b.Ctx, "Sales", "Jones")); len(ids) != 2 {
		t.Fatalf("Jones lists %v after the repair: the live entity 000002 was unlisted", ids)
	}
}

// Verify jobs write nothing, for option 2, option 1 (BlobStore) and option 3
// (a TableStore sharing the primary's table): with drift in the partition, the verify
// job's requests to the table and blob services are counted at the proxies: none may be
// a write. Forged jobs (a partition inside the shared TableStore's key space, a control
// character, a resume point on a verify) are poisoned without any table or blob request.
func TestVerifyJobsSendOnlyReads(t *testing.T) {
	t.Parallel()
	for _, option := range []string{"same partition", "eventual blob", "eventual shared table"} {
		t.Run(option, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			b.seed("Sales", 12)
			q := b.queue()
			var (
				register func(*queueworker.Registry) error
				check    verifier
				verify   func(...string) error
				kinds    []string
				prefix   string
			)
			switch option {
			case "same partition":
				x := b.samePartition(&SamePartitionOptions{Queue: q})
				if _, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil {
					t.Fatal(err)
				}
				register, check, kinds = x.Register, x, []string{x.BackfillKind(), x.VerifyKind(), x.RepairKind()}
				verify = func(p ...string) error { return x.StartVerify(b.Ctx, p...) }
			default:
				var s Store
				if option == "eventual blob" {
					s = b.blobStore()
				} else {
					ts := must(NewTableStore(must(repo.New[codec.Entity](b.Clients.Tables, b.Table, &repo.Options{Retry: fast})), "LastName", nil))
					prefix = ts.keyPrefix()
					s = ts
				}
				x := b.eventual(s, q)
				if _, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil {
					t.Fatal(err)
				}
				register, check, kinds = x.Register, x, []string{x.BackfillKind(), x.VerifyKind(), x.RepairKind()}
				verify = func(p ...string) error { return x.StartVerify(b.Ctx, p...) }
			}
			b.clean(check, "Sales", 12)
			b.injectDrift("Sales")
			b.TakeMessages(q)
			if err := verify("Sales"); err != nil {
				t.Fatal(err)
			}
			w := b.Worker(q, register)
			writes := func() int {
				n := 0
				for _, p := range []*faultproxy.Proxy{b.Proxies.Table, b.Proxies.Blob} {
					n += p.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Method != "GET" && r.Method != "HEAD" })
				}
				return n
			}
			before := writes()
			testbed.Drain(t, w)
			if n := writes() - before; n != 0 {
				t.Fatalf("the verify job sent %d write requests", n)
			}
			if s := w.Stats(); s.Processed != 1 || s.Poisoned != 0 {
				t.Fatalf("worker stats %+v", s)
			}
			// Forged jobs.
			forged := []map[string]string{{"pk": "Sal\u0085es"}, {"pk": "Sales", "after": "000003"}, {"pk": strings.Repeat("x", 513)}}
			if prefix != "" {
				forged = append(forged, map[string]string{"pk": prefix + "Jones"})
			}
			n := 0
			for _, p := range forged {
				for _, kind := range kinds {
					if p["after"] != "" && kind == kinds[0] {
						continue // a resume point is a backfill's own
					}
					if _, err := queueworker.Enqueue(b.Ctx, q, kind, "", p, nil); err != nil {
						t.Fatal(err)
					}
					n++
				}
			}
			mark := b.Proxies.Table.Count() + b.Proxies.Blob.Count()
			before2 := w.Stats()
			testbed.Drain(t, w)
			if got := w.Stats().Poisoned - before2.Poisoned; got != int64(n) {
				t.Fatalf("%d of %d forged jobs poisoned", got, n)
			}
			if got := b.Proxies.Table.Count() + b.Proxies.Blob.Count() - mark; got != 0 {
				t.Fatalf("%d table/blob requests for forged jobs", got)
			}
		})
	}
}

// The shared partition listing (maintain.Partitions, behind StartBackfill, StartVerify
// and StartRepair with no partition given) guards against a listing that does not
// advance; the service orders keys by UTF-16 code units, not Go's byte order. A partition key with a character above U+FFFF (an emoji,
// UTF-16 D83D..) sorts before one with a character in U+E000–U+FFFF (a fullwidth '!',
// FF01) on the service, after it in Go. A table holding both must still be listed whole.
func TestStartJobsListEveryPartitionInUTF16Order(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q := b.queue()
	x := b.samePartition(&SamePartitionOptions{Queue: q})
	for _, pk := range []string{"A", "\U0001F600x", "\uFF01x"} {
		if err := x.Insert(b.Ctx, emp(pk, "000001", "Jones")); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for pk, err := range x.Partitions(b.Ctx) {
		if err != nil {
			t.Fatalf("listing after %q: %v", got, err)
		}
		got = append(got, pk)
	}
	if len(got) != 3 {
		t.Fatalf("partitions %q, want 3", got)
	}
	if err := x.StartVerify(b.Ctx); err != nil {
		t.Fatalf("StartVerify of every partition: %v", err)
	}
}

// The job kinds name the table, as secondaryindex's do: two option-2 indexes named
// "LastName" on two tables (the employees' and the contractors') register on one worker
// (the archiver's `run` with both in Extensions.Indexes), and on two workers sharing a
// queue neither takes the other's jobs to run them on its own table.
func TestSamePartitionJobKindsNameTheTable(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q := b.queue()
	other := must(repo.New[Employee](b.Clients.Tables, b.NewTableName(), &repo.Options{Retry: fast}))
	a := b.samePartition(&SamePartitionOptions{Queue: q})
	c := must(NewSamePartition(other, "LastName", lastName, &SamePartitionOptions{Queue: q}))
	if a.VerifyKind() == c.VerifyKind() || a.BackfillKind() == c.BackfillKind() {
		t.Fatalf("indexes on tables %s and %s share the kinds %q, %q", b.emps.Name(), other.Name(), a.VerifyKind(), a.BackfillKind())
	}
	reg := queueworker.NewRegistry()
	if err := a.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := c.Register(reg); err != nil {
		t.Fatalf("the second table's index cannot join the worker: %v", err)
	}
}
