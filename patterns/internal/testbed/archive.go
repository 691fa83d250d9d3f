package testbed

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Archiver returns an Archiver on the bed's Clients (a companion's transaction actions
// must be built on the same client as the move's delete) with companions as the
// companions of the bed's table, and a fresh Archive table's name. It fails the test on
// an error.
func (b *Bed) Archiver(companions ...consistency.Companion) (*consistency.Archiver, string) {
	b.T.Helper()
	var comps map[string][]consistency.Companion
	if len(companions) > 0 {
		comps = map[string][]consistency.Companion{b.Table: companions}
	}
	a, err := consistency.New(b.Clients, &consistency.Options{Retry: FastRetry(), Companions: comps})
	if err != nil {
		b.T.Fatal(err)
	}
	return a, b.NewTableName()
}

// ArchiveJob is the job that moves (pk, rk) of the bed's table to the table target.
func (b *Bed) ArchiveJob(target, pk, rk string) consistency.ArchiveEntityJob {
	return consistency.ArchiveEntityJob{Source: b.Table, PartitionKey: pk, RowKey: rk, TargetTable: target}
}

// MustMove runs the job that archives (pk, rk) to target with a, and fails the test
// unless it succeeds (moved, or already archived) and the entity ends in target only.
func (b *Bed) MustMove(a *consistency.Archiver, target, pk, rk string) {
	b.T.Helper()
	out, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, pk, rk))
	if err != nil || (out != consistency.OutcomeMoved && out != consistency.OutcomeAlreadyArchived) {
		b.T.Fatalf("archive %s/%s: %v %v", pk, rk, out, err)
	}
	b.MustBeArchived(target, pk, rk)
}

// MustMoveConcurrently runs n deliveries of the job that archives (pk, rk) to target
// with a at once, and fails the test unless each succeeds (moved, or already archived)
// and the entity ends in target only.
func (b *Bed) MustMoveConcurrently(a *consistency.Archiver, n int, target, pk, rk string) {
	b.T.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, pk, rk))
			if err != nil || (out != consistency.OutcomeMoved && out != consistency.OutcomeAlreadyArchived) {
				b.T.Errorf("a delivery of the archive of %s/%s: %v %v", pk, rk, out, err)
			}
		}()
	}
	wg.Wait()
	b.MustBeArchived(target, pk, rk)
}

// MustMoveHeld archives (pk, rk) to target with a while the move's first entity group
// transaction is held at the bed's table proxy: once it is held, meanwhile runs (a live
// writer, a second delivery of the job), then the transaction is released. It fails the
// test unless the move succeeds (moved, or already archived) and the entity ends in
// target only, and returns how many transactions the move and meanwhile sent through
// the proxy.
func (b *Bed) MustMoveHeld(a *consistency.Archiver, target, pk, rk string, meanwhile func()) int {
	b.T.Helper()
	mark := b.Proxy().CountMatching(IsBatch)
	ps := b.Proxy().PauseAt("the move's transaction", faultproxy.IsBatch, 1)
	defer ps.Release()
	type result struct {
		out consistency.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, pk, rk))
		done <- result{out, err}
	}()
	WaitHeld(b.T, ps)
	meanwhile()
	ps.Release()
	r := <-done
	if r.err != nil || (r.out != consistency.OutcomeMoved && r.out != consistency.OutcomeAlreadyArchived) {
		b.T.Fatalf("the held archive of %s/%s: %v %v", pk, rk, r.out, r.err)
	}
	b.MustBeArchived(target, pk, rk)
	return b.Proxy().CountMatching(IsBatch) - mark
}

// MustBeArchived fails the test unless (pk, rk) is in the table target and no longer in
// the bed's table (both read directly).
func (b *Bed) MustBeArchived(target, pk, rk string) {
	b.T.Helper()
	if _, err := b.Raw.Get(b.Ctx, pk, rk); !errors.Is(err, repo.ErrNotFound) {
		b.T.Fatalf("%s/%s is still in the source table: %v", pk, rk, err)
	}
	arch, err := repo.New[codec.Entity](b.Direct.Tables, target, nil)
	if err != nil {
		b.T.Fatal(err)
	}
	if _, err := arch.Get(b.Ctx, pk, rk); err != nil {
		b.T.Fatalf("%s/%s is not in the archive: %v", pk, rk, err)
	}
}

// ErrStop is the error a CrashAfterBefore companion stops its move with.
var ErrStop = errors.New("testbed: the process stops here")

// CrashAfterBefore wraps a companion: the Before of its removals runs the companion's own
// and then returns ErrStop, as a crash between Before and the move's delete would.
type CrashAfterBefore struct{ consistency.Companion }

// Removal implements consistency.Companion.
func (c CrashAfterBefore) Removal(ctx context.Context, e *codec.Entity) (consistency.Removal, error) {
	r, err := c.Companion.Removal(ctx, e)
	if err != nil {
		return r, err
	}
	before := r.Before
	r.Before = func(ctx context.Context) error {
		if before != nil {
			if err := before(ctx); err != nil {
				return err
			}
		}
		return ErrStop
	}
	return r, nil
}

// IsBatch selects the entity group transactions among the requests a proxy saw
// (faultproxy.Proxy.CountMatching).
func IsBatch(r faultproxy.RequestInfo) bool {
	return r.Method == "POST" && strings.HasSuffix(r.Path, "/$batch")
}

// IsWrite selects the requests a proxy saw that are not reads.
func IsWrite(r faultproxy.RequestInfo) bool { return r.Method != "GET" }
