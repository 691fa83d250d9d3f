package consistency

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"

	"github.com/tablepatterns/tablepatterns/internal/testenv"

	"net/http"
	"slices"
	"sync"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// A store that refuses an entity's delete every time, while the entity is there at the
// version copied (Azurite's $batch addresses another row for a RowKey with U+2028, so a
// move whose companions need a transaction meets 404 on each try), fails the move once
// with a permanent error that says so: no restart after the second identical refusal,
// no "the source or the target changed", the entity left in the source with its copy.
func TestArchiveEntityRefusedDeleteFailsOnceAsPermanent(t *testing.T) {
	t.Parallel()
	b := setupCompanion(t, nil)
	rk := "a\u2028"
	if err := b.current.Insert(b.ctx, employee("Sales", rk, 30)); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "copy-" + rk, Properties: map[string]any{"Of": rk}}); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	b.a.seams.step = func(job, step string) error {
		if step == "read" {
			attempts.Add(1)
		}
		return nil
	}
	out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", rk))
	if err == nil || !errors.Is(err, errs.ErrInvalidInput) || errors.Is(err, errRestart) || !permanent(err) {
		t.Fatalf("move: %v %v; want a permanent ErrInvalidInput", out, err)
	}
	if strings.Contains(err.Error(), "changed during the move") || !strings.Contains(err.Error(), "refuses the delete") {
		t.Fatalf("the error does not say what happened: %v", err)
	}
	if n := attempts.Load(); n > 2 {
		t.Fatalf("the move ran %d attempts; want at most 2 (one to tell a one-off refusal from a permanent one)", n)
	}
	if _, err := b.current.Get(b.ctx, "Sales", rk); err != nil {
		t.Fatalf("the entity is no longer in the source: %v", err)
	}
	if _, err := b.archive.Get(b.ctx, "Sales", rk); err != nil {
		t.Fatalf("the copy is not in the target: %v", err)
	}
}

// lineSeparatorCopy is a companion whose copy of an entity sits at RowKey "copy\u2028"
// + the entity's RowKey: a row Azurite's $batch cannot address (its delete action
// addresses "copy" instead and answers 404).
type lineSeparatorCopy struct{ tbl *repo.Table[codec.Entity] }

func (c lineSeparatorCopy) Removal(ctx context.Context, e *codec.Entity) (Removal, error) {
	cp, err := c.tbl.Get(ctx, e.PartitionKey, "copy\u2028"+e.RowKey)
	if errors.Is(err, errs.ErrNotFound) {
		return Removal{}, nil
	}
	if err != nil {
		return Removal{}, err
	}
	return Removal{Actions: []repo.Action{c.tbl.DeleteAction(cp.PartitionKey, cp.RowKey, &repo.DeleteOptions{ETag: cp.ETag})}}, nil
}

// The same for a companion's copy that the store refuses to delete in the transaction
// (404) while it is there: the move fails once, permanently, and says that the store
// refused a companion's delete, never that the source or the target changed.
func TestArchiveEntityCompanionDeleteRefusedTwiceFailsOnceAsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {lineSeparatorCopy{b.current}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, employee("Sales", "e1", 30)); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "copy\u2028e1", Properties: map[string]any{"Of": "e1"}}); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	a.seams.step = func(job, step string) error {
		if step == "read" {
			attempts.Add(1)
		}
		return nil
	}
	out, err := a.ArchiveEntity(b.ctx, b.job("Sales", "e1"))
	if err == nil || !errors.Is(err, errs.ErrInvalidInput) || errors.Is(err, errRestart) || !permanent(err) {
		t.Fatalf("move: %v %v; want a permanent ErrInvalidInput", out, err)
	}
	if strings.Contains(err.Error(), "changed") || !strings.Contains(err.Error(), "refuses the delete of a companion's copy") {
		t.Fatalf("the error does not say what happened: %v", err)
	}
	if n := attempts.Load(); n > 2 {
		t.Fatalf("the move ran %d attempts; want at most 2", n)
	}
	if _, err := b.current.Get(b.ctx, "Sales", "e1"); err != nil {
		t.Fatalf("the entity is no longer in the source: %v", err)
	}
}

// In a range move, the entity whose companion copy the store refuses to delete in every
// delete transaction (404 while the companion finds it there) is left in the source and
// reported (RangeReport.Skipped) after two attempts, and the rest of its batch moves;
// the job does not restart until its retries end.
func TestArchiveRangeCompanionDeleteRefusedTwiceSkipsTheEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {lineSeparatorCopy{b.current}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, rk := range []string{"e1", "e2", "e3"} {
		if err := b.current.Insert(b.ctx, employee("Sales", rk, 30)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "copy\u2028e2", Properties: map[string]any{"Of": "e2"}}); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	a.seams.step = func(job, step string) error {
		if step == "read" {
			attempts.Add(1)
		}
		return nil
	}
	rep, err := a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", RowKeyFrom: "e", RowKeyTo: "f", TargetTable: b.archive.Name()})
	if err != nil || rep.Moved != 2 || len(rep.Skipped) != 1 || rep.Skipped[0] != (RangeKey{"Sales", "e2"}) {
		t.Fatalf("%+v %v; want e1 and e3 moved, e2 skipped", rep, err)
	}
	if n := attempts.Load(); n > 3 {
		t.Fatalf("the batch ran %d attempts; want at most 3", n)
	}
	if _, err := b.current.Get(b.ctx, "Sales", "e2"); err != nil {
		t.Fatalf("e2 is no longer in the source: %v", err)
	}
}

// A RowKey with U+2028 (valid; single requests handle it). On Azurite a delete action
// in a $batch that addresses such a key answers 404 ResourceNotFound although the entity
// is there (inserts in a $batch pass). The single move with a companion copy deletes in
// a transaction: the 404 is read as "gone", the target holds the version, and the move
// answers OutcomeMoved while the entity is still in the source. A 404 must not be
// taken as proof the source is gone without looking (the move's own documentation: a
// 404 counts as moved only when the copy records the version, and the entity is gone).
func TestEntity404NotGone(t *testing.T) {
	t.Parallel()
	b := setupCompanion(t, nil)
	rk := "a\u2028"
	if err := b.current.Insert(b.ctx, employee("Sales", rk, 30)); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "copy-" + rk, Properties: map[string]any{"Of": rk}}); err != nil {
		t.Fatal(err)
	}
	out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", rk))
	_, gerr := b.current.Get(b.ctx, "Sales", rk)
	if err == nil && out == OutcomeMoved && gerr == nil {
		t.Fatalf("the move answered %v, and the entity is still in the source", out)
	}
}

// The same keys in a range move (table and blob targets): on Azurite the delete
// transaction answers 404 for an entity that is there (or 400 for U+2028 in the
// PartitionKey). Observed: the batch restarts until its retries end and the job fails
// (then poison), with the rest of the partition unarchived.
func TestRangeLineSeparatorKeys(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"table", "blob"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "")
			rks := []string{"a", "b\u2029", "c"}
			for _, rk := range rks {
				if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: rk, Properties: map[string]any{"V": int32(1)}}); err != nil {
					t.Fatal(err)
				}
			}
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
			if target == "blob" {
				c := testenv.ContainerName(t)
				t.Cleanup(func() { _, _ = b.clients.Blobs.DeleteContainer(context.Background(), c, nil) })
				job.TargetTable, job.TargetContainer = "", c
			}
			rep, err := b.a.ArchiveRange(b.ctx, job)
			left, lerr := b.current.Collect(b.ctx, repo.Query{})
			if err != nil || lerr != nil || len(left) != 0 {
				t.Fatalf("%+v %v; %d left in the source", rep, err, len(left))
			}
		})
	}
}

// falseNotFoundOnFirstDelete makes p answer the first entity DELETE of table with 404
// ResourceNotFound without forwarding it (rule "404"): a store that refuses a delete of
// an entity that is there.
func falseNotFoundOnFirstDelete(p *faultproxy.Proxy, table string) {
	var n atomic.Int32
	match := func(r *http.Request) bool {
		return r.Method == http.MethodDelete && strings.Contains(r.URL.Path, table) && n.Add(1) == 1
	}
	p.AddRule(faultproxy.Rule{Name: "404", Match: match, Action: faultproxy.Respond(http.StatusNotFound, "ResourceNotFound")})
}

// A store answers the single move's plain delete with 404 while the entity is there
// (synthesized at the proxy, the request never forwarded). The move must not take the
// 404 for "gone" although the target holds the version: one Get sees the entity, the
// move starts over and really deletes it.
func TestArchiveEntity404WhileThereStartsOver(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	e := employee("Sales", "e1", 30)
	if err := b.current.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	falseNotFoundOnFirstDelete(ps.Table, b.current.Name())
	out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "e1"))
	if err != nil || out != OutcomeMoved {
		t.Fatalf("move: %v %v", out, err)
	}
	if ps.Table.Fired("404") != 1 {
		t.Fatalf("the rule fired %d times", ps.Table.Fired("404"))
	}
	if _, err := b.current.Get(b.ctx, "Sales", "e1"); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("the move answered moved; the source: %v", err)
	}
	b.assertArchived(t, "Sales", "e1", e)
}

// Azurite's $batch reads a delete's keys from the decoded URL with a JavaScript regular
// expression whose '.' stops at U+2028/U+2029: the delete of (Sales, "b\u2029") in a
// transaction addresses (Sales, "") instead. With an entity at the empty RowKey beside
// it, its If-Match delete answers 412 (another row's ETag) while the entity is there,
// unchanged: the range must delete it on its own, never touch the other row by mistake,
// and move the partition.
func TestArchiveRangeLineSeparatorKeyBesideEmptyRowKey(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	want := map[RangeKey]string{}
	for _, rk := range []string{"", "a", "b\u2029", "c\u2028d"} {
		e := &codec.Entity{PartitionKey: "Sales", RowKey: rk, Properties: map[string]any{"N": int32(len(want)), "Name": "employee Sales/" + string(rune('0'+len(want)))}}
		if err := b.current.Insert(b.ctx, e); err != nil {
			t.Fatal(err)
		}
		want[RangeKey{"Sales", rk}] = e.ETag
	}
	rep, err := b.a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()})
	if err != nil || rep.Moved != 4 || len(rep.Skipped) != 0 {
		t.Fatalf("range: %+v %v", rep, err)
	}
	b.assertRangeArchived(t, want, nil)
}

// The same key with a companion whose action must share the delete's transaction (a
// sibling copy): the entity cannot leave the transaction, so it is left in the source
// with its copy and reported in Skipped; the rest of the range moves, and the
// companion's After hooks do not run for it.
func TestArchiveRangeLineSeparatorKeyWithCompanionSkipped(t *testing.T) {
	t.Parallel()
	b := setupCompanion(t, nil)
	b.insertWithCopy(t, "a")
	b.insertWithCopy(t, "b\u2029")
	rep, err := b.a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", RowKeyTo: "c", TargetTable: b.archive.Name()})
	if err != nil || rep.Moved != 1 || !slices.Equal(rep.Skipped, []RangeKey{{"Sales", "b\u2029"}}) {
		t.Fatalf("range: %+v %v", rep, err)
	}
	left, err := b.current.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range left {
		got = append(got, e.RowKey)
	}
	if !slices.Equal(got, []string{"b\u2029", "copy-b\u2029"}) {
		t.Fatalf("left in the source: %q; want the skipped entity and its copy", got)
	}
}

// afterLooks is a companion whose only step is After: it records, each time it runs,
// whether the entity is still in the table (After is for entities that are gone).
type afterLooks struct {
	tbl     *repo.Table[codec.Entity]
	mu      sync.Mutex
	present []bool
}

func (c *afterLooks) Removal(_ context.Context, e *codec.Entity) (Removal, error) {
	pk, rk := e.PartitionKey, e.RowKey
	return Removal{After: func(ctx context.Context) error {
		_, err := c.tbl.Get(ctx, pk, rk)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.present = append(c.present, err == nil)
		return nil
	}}, nil
}

func (c *afterLooks) Gone(context.Context, string, string) error { return nil }

// The same 404 for an entity that is there, with a companion whose only step is After
// (it removes copies once the entity is gone): the 404 must not run After while the
// entity is still in the table; After runs once, for the delete that landed.
func TestArchiveEntity404WhileThereRunsNoAfter(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	c := &afterLooks{tbl: b.current}
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {c}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, employee("Sales", "e1", 30)); err != nil {
		t.Fatal(err)
	}
	falseNotFoundOnFirstDelete(ps.Table, b.current.Name())
	out, err := a.ArchiveEntity(b.ctx, b.job("Sales", "e1"))
	if err != nil || out != OutcomeMoved || ps.Table.Fired("404") != 1 {
		t.Fatalf("move: %v %v (the rule fired %d times)", out, err, ps.Table.Fired("404"))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Equal(c.present, []bool{false}) {
		t.Fatalf("After ran with the entity present: %v; want once, after it was gone", c.present)
	}
}

// A PartitionKey with U+2028: Azurite refuses every delete of the partition in a
// transaction (400 InvalidInput: its regular expression finds no PartitionKey); each
// entity is deleted alone and the partition moves.
func TestArchiveRangeLineSeparatorPartitionKey(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	want := map[RangeKey]string{}
	for n := range 3 {
		e := rangeEntity("S\u2028", n, 1)
		if err := b.current.Insert(b.ctx, e); err != nil {
			t.Fatal(err)
		}
		want[RangeKey{e.PartitionKey, e.RowKey}] = e.ETag
	}
	rep, err := b.a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "S\u2028", TargetTable: b.archive.Name()})
	if err != nil || rep.Moved != 3 {
		t.Fatalf("range: %+v %v", rep, err)
	}
	b.assertRangeArchived(t, want, nil)
}
