package consistency

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

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
