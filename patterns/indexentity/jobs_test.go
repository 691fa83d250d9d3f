package indexentity

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

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
