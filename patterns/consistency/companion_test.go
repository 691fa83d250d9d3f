package consistency

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// sibling is a companion that keeps one copy of every entity in its partition, at RowKey
// "copy-" + the entity's RowKey (the shape of an intra-partition index), read by Removal
// and deleted If-Match with the entity. Its hooks count their calls.
type sibling struct {
	tbl                     *repo.Table[codec.Entity]
	removals, befores, afts atomic.Int32
	before                  func(ctx context.Context, call int32) error
	after                   error
	within                  time.Duration
}

func (s *sibling) Removal(ctx context.Context, e *codec.Entity) (Removal, error) {
	s.removals.Add(1)
	if e.Properties["Forged"] != nil {
		return Removal{}, errs.Invalid("entity", "forged")
	}
	r := Removal{Within: s.within}
	r.Before = func(ctx context.Context) error {
		n := s.befores.Add(1)
		if s.before != nil {
			return s.before(ctx, n)
		}
		return nil
	}
	r.After = func(context.Context) error { s.afts.Add(1); return s.after }
	cp, err := s.tbl.Get(ctx, e.PartitionKey, "copy-"+e.RowKey)
	if errors.Is(err, repo.ErrNotFound) {
		return r, nil
	}
	if err != nil {
		return Removal{}, err
	}
	r.Actions = []repo.Action{s.tbl.DeleteAction(cp.PartitionKey, cp.RowKey, &repo.DeleteOptions{ETag: cp.ETag})}
	return r, nil
}

// companionBed is a bed whose archiver goes through a fault proxy and has one sibling
// companion on Current.
type companionBed struct {
	*bed
	ps  *testenv.ProxySet
	sib *sibling
}

func setupCompanion(t *testing.T, logger *zap.Logger) *companionBed {
	t.Helper()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	sib := &sibling{tbl: b.current}
	a, err := New(b.clients, &Options{Retry: fastRetry(), Logger: logger, Companions: map[string][]Companion{b.current.Name(): {sib}}})
	if err != nil {
		t.Fatal(err)
	}
	b.a = a
	return &companionBed{bed: b, ps: ps, sib: sib}
}

// insertWithCopy inserts an employee and its sibling copy.
func (b *companionBed) insertWithCopy(t *testing.T, rk string) {
	t.Helper()
	if err := b.current.Insert(b.ctx, employee("Sales", rk, 30)); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "copy-" + rk, Properties: map[string]any{"Of": rk}}); err != nil {
		t.Fatal(err)
	}
}

func (b *companionBed) requestsSince(mark int) []string {
	var out []string
	for _, r := range b.ps.Table.Requests()[mark:] {
		path := r.Path
		switch {
		case strings.Contains(path, b.current.Name()):
			path = "current"
		case strings.Contains(path, b.archive.Name()):
			path = "archive"
		case strings.HasSuffix(path, "/$batch"):
			path = "$batch"
		}
		out = append(out, r.Method+" "+path)
	}
	return out
}

// Without companions a move sends exactly what it always sent; with a companion that
// has no copy of the entity and no hooks to run, too: no transaction for one delete.
func TestArchiveEntityUnindexedMoveSendsTheSameRequests(t *testing.T) {
	t.Parallel()
	want := []string{"GET archive", "GET current", "POST archive", "DELETE current"}
	plain := setupCompanion(t, nil)
	plain.a.companionsByTable, plain.a.opts.Companions = nil, nil
	if err := plain.current.Insert(plain.ctx, employee("Sales", "000001", 30)); err != nil {
		t.Fatal(err)
	}
	mark := len(plain.ps.Table.Requests())
	if out, err := plain.a.ArchiveEntity(plain.ctx, plain.job("Sales", "000001")); err != nil || out != OutcomeMoved {
		t.Fatalf("move: %v %v", out, err)
	}
	if got := plain.requestsSince(mark); !slices.Equal(got, want) {
		t.Fatalf("without companions the move sent %q, want %q", got, want)
	}

	b := setupCompanion(t, nil)
	b.sib.before = nil
	if err := b.current.Insert(b.ctx, employee("Sales", "000001", 30)); err != nil {
		t.Fatal(err)
	}
	mark = len(b.ps.Table.Requests())
	if out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000001")); err != nil || out != OutcomeMoved {
		t.Fatalf("move: %v %v", out, err)
	}
	// The companion's own read of its (absent) copy comes first, then the same requests.
	if got := b.requestsSince(mark); !slices.Equal(got, append([]string{"GET archive", "GET current", "GET current"}, want[2:]...)) {
		t.Fatalf("with a companion that has nothing to remove the move sent %q", got)
	}
	b.assertArchived(t, "Sales", "000001", employee("Sales", "000001", 30))
}

// With a copy, the delete and the companion's action are one transaction; After runs
// once the delete landed.
func TestArchiveEntityCompanionActionsCommitWithTheDelete(t *testing.T) {
	t.Parallel()
	b := setupCompanion(t, nil)
	b.insertWithCopy(t, "000001")
	if got := b.mustMoveWithCopy(t, 1); !slices.Equal(got, []string{"GET archive", "GET current", "GET current", "POST archive", "POST $batch"}) {
		t.Fatalf("the move sent %q", got)
	}
}

// mustMoveWithCopy archives Sales/000001, and fails the test unless it is moved with its
// copy, Before having run befores times in all and After once. It returns the requests
// the move sent.
func (b *companionBed) mustMoveWithCopy(t *testing.T, befores int32) []string {
	t.Helper()
	mark := len(b.ps.Table.Requests())
	if out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000001")); err != nil || out != OutcomeMoved {
		t.Fatalf("move: %v %v", out, err)
	}
	sent := b.requestsSince(mark)
	if _, err := b.current.Get(b.ctx, "Sales", "copy-000001"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the copy survived: %v", err)
	}
	if b.sib.befores.Load() != befores || b.sib.afts.Load() != 1 {
		t.Fatalf("Before ran %d times (want %d), After %d (want 1)", b.sib.befores.Load(), befores, b.sib.afts.Load())
	}
	b.assertArchived(t, "Sales", "000001", employee("Sales", "000001", 30))
	return sent
}

// A copy that changes (412) or goes (404) between Removal and the transaction fails it
// as a whole: the move starts over from fresh reads and ends with entity and copy gone.
func TestArchiveEntityCompanionCopyChangesBeforeTheTransaction(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		change func(b *companionBed) error
	}{
		{"changed", func(b *companionBed) error {
			return b.current.Update(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "copy-000001", Properties: map[string]any{"Of": "x"}}, &repo.UpdateOptions{Unconditional: true})
		}},
		{"deleted", func(b *companionBed) error { return b.current.Delete(b.ctx, "Sales", "copy-000001", nil) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setupCompanion(t, nil)
			b.insertWithCopy(t, "000001")
			b.sib.before = func(_ context.Context, call int32) error {
				if call == 1 {
					return c.change(b)
				}
				return nil
			}
			b.mustMoveWithCopy(t, 2)
			if n := b.sib.removals.Load(); n != 2 {
				t.Fatalf("Removal asked %d times, want 2 (the move starts over once)", n)
			}
		})
	}
}

// A stop after the Before hooks and before the transaction leaves entity and copy in
// place; the rerun moves both (Before runs again: it must be idempotent).
func TestArchiveEntityStopBetweenBeforeAndDelete(t *testing.T) {
	t.Parallel()
	b := setupCompanion(t, nil)
	b.insertWithCopy(t, "000001")
	b.a.seams.step = func(_, s string) error {
		if s == "companions-before" {
			return errCrash
		}
		return nil
	}
	if _, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000001")); !errors.Is(err, errCrash) {
		t.Fatalf("stopped move: %v", err)
	}
	for _, rk := range []string{"000001", "copy-000001"} {
		if _, err := b.current.Get(b.ctx, "Sales", rk); err != nil {
			t.Fatalf("%s after the stop: %v", rk, err)
		}
	}
	b.a.seams.step = nil
	b.mustMoveWithCopy(t, 2)
}

// Within bounds Before and the delete with one deadline: a Before still running when it
// passes makes the move start over, without sending the delete.
func TestArchiveEntityWithinDeadlineRestartsTheMove(t *testing.T) {
	t.Parallel()
	b := setupCompanion(t, nil)
	b.insertWithCopy(t, "000001")
	// Long enough for the second attempt's delete transaction on a loaded machine (with
	// 50 ms, a slow delete was abandoned after it landed, and the third attempt found the
	// move done); the first attempt's Before waits it out.
	b.sib.within = 2 * time.Second
	b.sib.before = func(ctx context.Context, call int32) error {
		if call == 1 {
			<-ctx.Done() // a slow enqueue: the deadline passes first
			return ctx.Err()
		}
		return nil
	}
	mark := len(b.ps.Table.Requests())
	if out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000001")); err != nil || out != OutcomeMoved {
		t.Fatalf("move: %v %v", out, err)
	}
	sent := b.requestsSince(mark)
	if n := countOf(sent, "POST $batch"); n != 1 {
		t.Fatalf("the move sent %d transactions, want 1 (none in the late attempt): %q", n, sent)
	}
	if b.sib.removals.Load() != 2 {
		t.Fatalf("Removal asked %d times, want 2", b.sib.removals.Load())
	}
	b.assertArchived(t, "Sales", "000001", employee("Sales", "000001", 30))
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// A companion that refuses the entity (forged) stops the move before anything is
// written, with a permanent error; a failed After is logged, and the move reports success.
func TestArchiveEntityCompanionRefusalAndFailedAfter(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.WarnLevel)
	b := setupCompanion(t, zap.New(core))
	forged := employee("Sales", "000002", 30)
	forged.Properties["Forged"] = true
	if err := b.current.Insert(b.ctx, forged); err != nil {
		t.Fatal(err)
	}
	mark := len(b.ps.Table.Requests())
	_, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000002"))
	if !errors.Is(err, errs.ErrInvalidInput) || !permanent(err) {
		t.Fatalf("forged entity: %v, want a permanent invalid input", err)
	}
	for _, r := range b.requestsSince(mark) {
		if !strings.HasPrefix(r, "GET ") {
			t.Fatalf("the refused move sent %s", r)
		}
	}
	if _, err := b.archive.Get(b.ctx, "Sales", "000002"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the refused move wrote the archive: %v", err)
	}

	b.insertWithCopy(t, "000001")
	b.sib.after = fmt.Errorf("queue down (sig=%s)", "secret")
	if out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000001")); err != nil || out != OutcomeMoved {
		t.Fatalf("move with a failing After: %v %v", out, err)
	}
	if logs.FilterMessageSnippet("prompt step failed").Len() != 1 {
		t.Fatalf("the failed After was not logged: %v", logs.All())
	}
}

// The companions' actions must go through the archiver's client: actions built on
// another client are refused before the transaction is sent, and the source is kept.
func TestArchiveEntityCompanionOnAnotherClientIsRefused(t *testing.T) {
	t.Parallel()
	b := setupCompanion(t, nil)
	other, err := account.NewClients(b.ps.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.sib.tbl, err = repo.New[codec.Entity](other.Tables, b.current.Name(), nil); err != nil {
		t.Fatal(err)
	}
	b.insertWithCopy(t, "000001")
	mark := len(b.ps.Table.Requests())
	if _, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000001")); !errors.Is(err, errs.ErrInvalidInput) {
		t.Fatalf("move: %v, want invalid input", err)
	}
	if n := countOf(b.requestsSince(mark), "POST $batch"); n != 0 {
		t.Fatalf("%d transactions sent", n)
	}
	if _, err := b.current.Get(b.ctx, "Sales", "000001"); err != nil {
		t.Fatalf("the source after the refusal: %v", err)
	}
	if _, err := b.archive.Get(b.ctx, "Sales", "000001"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the archive copy was written before the refusal: %v", err)
	}
}

// A job names its source table in any spelling; the move addresses the table as
// Options.Companions spells it (the companions' actions carry that spelling), found in
// the map New keyed by lower-case name, and a table without companions as the job spells
// it. Sends nothing.
func TestCompanionSpellingFromTheIndex(t *testing.T) {
	t.Parallel()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	sib := &sibling{}
	a, err := New(clients, &Options{Companions: map[string][]Companion{"CurrentEmployees": {sib}, "Other": nil}})
	if err != nil {
		t.Fatal(err)
	}
	for job, want := range map[string]string{
		"currentemployees": "CurrentEmployees", "CURRENTEMPLOYEES": "CurrentEmployees", "CurrentEmployees": "CurrentEmployees",
		"oTHER": "Other", "Unrelated": "Unrelated",
	} {
		if got := a.companionSpelling(job); got != want {
			t.Errorf("%s: addressed as %s, want %s", job, got, want)
		}
	}
	if cs := a.companions("CURRENTemployees"); len(cs) != 1 || cs[0] != Companion(sib) {
		t.Fatalf("companions %v", cs)
	}
	if cs := a.companions("Unrelated"); cs != nil {
		t.Fatalf("companions of a table without any: %v", cs)
	}
}
