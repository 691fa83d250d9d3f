package secondaryindex_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// byEmailLower is an email index that lower-cases on write and on lookup.
var byEmailLower = secondaryindex.Index[Employee]{Name: "email", Value: func(e *Employee) string { return e.Email },
	Normalize: strings.ToLower}

// Issue 13 item 7: an email index that lower-cases finds the entity when asked with the
// case the user typed, through every read (Lookup, Find, Prefix, Range), and the copy is
// keyed by the normalized value only (one copy, whatever case the entity holds).
func TestIntraNormalizeAppliesOnWriteAndLookup(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmailLower)
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", "Ann@Example.com")); err != nil {
		t.Fatal(err)
	}
	if got := b.rows(t, "Sales"); strings.Join(got, " ") != "email_ann@example.com empid_000001" {
		t.Fatalf("rows %q, want the copy under the lower-cased value", got)
	}
	for _, asked := range []string{"Ann@Example.com", "ann@example.com", "ANN@EXAMPLE.COM"} {
		got, err := x.Lookup(b.Ctx, "Sales", "email", asked)
		if err != nil || got.EmployeeID != "000001" || got.Email != "Ann@Example.com" {
			t.Errorf("Lookup(%q) = %+v, %v", asked, got, err)
		}
		if n := len(collect(t, x.Find(b.Ctx, "Sales", "email", asked, nil))); n != 1 {
			t.Errorf("Find(%q) found %d", asked, n)
		}
	}
	if n := len(collect(t, x.Prefix(b.Ctx, "Sales", "email", "AN", nil))); n != 1 {
		t.Errorf("Prefix(AN) found %d", n)
	}
	if n := len(collect(t, x.Range(b.Ctx, "Sales", "email", "AM", "AO", nil))); n != 1 {
		t.Errorf("Range(AM, AO) found %d", n)
	}
	// A change of case only keeps the copy's key: the entity does not collide with itself.
	ann, err := x.Get(b.Ctx, "Sales", "000001")
	if err != nil {
		t.Fatal(err)
	}
	ann.Email = "ANN@example.COM"
	if err := x.Update(b.Ctx, &ann); err != nil {
		t.Fatalf("update to another case of the same email: %v", err)
	}
	if got := b.rows(t, "Sales"); strings.Join(got, " ") != "email_ann@example.com empid_000001" {
		t.Fatalf("rows after the case change %q", got)
	}
	// A unique index compares normalized values: another case of the same email is taken.
	var uv *secondaryindex.UniqueViolationError
	if err := x.Insert(b.Ctx, emp(2, "Bo", "Lee", "ANN@example.com")); !errors.As(err, &uv) || uv.Value != "ann@example.com" {
		t.Fatalf("insert of the same email in another case: %v", err)
	}
}

func TestInterNormalizeAppliesOnWriteAndLookup(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmailLower)
	w := b.worker(t, queue, x)
	e := iemp(11, "Ann", "Lee", "Ann@Example.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	if b.row(t, "email_Sales", interKey("ann@example.com", e.RowKey)) == nil {
		t.Fatalf("no copy under the lower-cased value: %q", b.rows(t, "email_Sales"))
	}
	for _, asked := range []string{"Ann@Example.com", "ann@EXAMPLE.com"} {
		got, err := x.Lookup(b.Ctx, "Sales", "email", asked)
		if err != nil || got.RowKey != e.RowKey {
			t.Errorf("Lookup(%q) = %+v, %v", asked, got, err)
		}
		verified := collect(t, x.Find(b.Ctx, "Sales", "email", asked, &secondaryindex.ReadOptions{Verify: true}))
		if len(verified) != 1 {
			t.Errorf("verified Find(%q) found %d: the verification must compare normalized values", asked, len(verified))
		}
	}
	if n := len(collect(t, x.Prefix(b.Ctx, "Sales", "email", "AN", nil))); n != 1 {
		t.Errorf("Prefix(AN) found %d", n)
	}
}

// Issue 13 item 7: a write whose caller's ETag no longer matches names the entity's real
// keys (its partition and primary copy) and says that the ETag changed; it does not blame
// a missing copy, whichever copy the value was read through.
func TestIntraStaleETagErrorNamesTheEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail, byLast)
	if err := x.Insert(b.Ctx, emp(7, "Ken", "Kwok", "kenk@contoso.com")); err != nil {
		t.Fatal(err)
	}
	viaID, err := x.Get(b.Ctx, "Sales", "000007")
	if err != nil {
		t.Fatal(err)
	}
	viaLast := collect(t, x.Find(b.Ctx, "Sales", "last", "Kwok", nil))
	other := viaID
	other.LastName = "Kwoh" // moves the "last" copy the second reader read through
	if err := x.Update(b.Ctx, &other); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]*Employee{"read through the primary": &viaID, "read through a moved copy": &viaLast[0]} {
		v.Age = 50
		err := x.Update(b.Ctx, v)
		if !errors.Is(err, repo.ErrPreconditionFailed) {
			t.Fatalf("%s: %v, want ErrPreconditionFailed", name, err)
		}
		msg := err.Error()
		for _, want := range []string{`PartitionKey="Sales"`, `RowKey="empid_000007"`, "ETag changed"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q lacks %q", name, msg, want)
			}
		}
		if strings.Contains(msg, "no longer exists") || strings.Contains(msg, `PartitionKey=""`) {
			t.Errorf("%s: %q blames a missing copy or an empty partition", name, msg)
		}
	}
}

// The default kind is "secondaryindex.reconcile." and the table's name, and a message of
// that kind enqueued by another program (after a write around the index) is handled by
// Register's handler.
func TestInterRegisterHandlesTheDefaultKind(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	if !strings.HasPrefix(x.Kind(), "secondaryindex.reconcile.") {
		t.Fatalf("kind %q, want secondaryindex.reconcile.<table>", x.Kind())
	}
	e := iemp(21, "Old", "Kind", "old@contoso.com")
	if err := x.Table().Insert(b.Ctx, e); err != nil { // around the index: no message
		t.Fatal(err)
	}
	if _, err := queueworker.Enqueue(b.Ctx, q, "secondaryindex.reconcile."+b.Table, "", secondaryindex.Ref{PartitionKey: "Sales", RowKey: e.RowKey}, nil); err != nil {
		t.Fatal(err)
	}
	w := b.worker(t, queue, x)
	testbed.Drain(t, w)
	if st := w.Stats(); st.Processed != 1 || st.Poisoned != 0 {
		t.Fatalf("stats %+v, want the message processed", st)
	}
	if b.row(t, "email_Sales", interKey("old@contoso.com", e.RowKey)) == nil {
		t.Fatal("the message did not reconcile the copy")
	}
}

// Inter.Lookup has Intra.Lookup's signature and promise: the entity returned has the value
// now. Between an update and its reconciliation the old value's copy is still there (an
// unverified Find returns it); Lookup checks it against the primary and finds nothing.
func TestInterLookupNeverReturnsAStaleCopy(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, queue, x)
	e := iemp(31, "Sam", "Stale", "sam@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	e.Email = "samuel@contoso.com"
	if err := x.Update(b.Ctx, e); err != nil { // not reconciled yet: the old copy stays
		t.Fatal(err)
	}
	if n := len(collect(t, x.Find(b.Ctx, "Sales", "email", "sam@contoso.com", nil))); n != 1 {
		t.Fatalf("unverified Find found %d, want the stale copy", n)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "sam@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Lookup of the old value = %+v, %v; want ErrNotFound", got, err)
	}
}

// index is the method set Intra and Inter share, with the same signatures: the package
// documentation promises it, and this fails to compile when either variant drifts.
type index[T any] interface {
	Get(ctx context.Context, pk, id string) (T, error)
	Lookup(ctx context.Context, pk, index, value string) (T, error)
	Find(ctx context.Context, pk, index, value string, opts *secondaryindex.ReadOptions) iter.Seq2[T, error]
	Range(ctx context.Context, pk, index, from, to string, opts *secondaryindex.ReadOptions) iter.Seq2[T, error]
	Prefix(ctx context.Context, pk, index, prefix string, opts *secondaryindex.ReadOptions) iter.Seq2[T, error]
	Insert(ctx context.Context, v *T) error
	Update(ctx context.Context, v *T) error
	Upsert(ctx context.Context, v *T) error
	Delete(ctx context.Context, v *T) error
	CreateIfNotExists(ctx context.Context) error
	DeleteTable(ctx context.Context) error
	Table() *repo.Table[T]
	Name() string
}

var (
	_ index[Employee] = (*secondaryindex.Intra[Employee])(nil)
	_ index[Employee] = (*secondaryindex.Inter[Employee])(nil)
)

// Issue 16: Intra's reads take Inter's *ReadOptions. Verify is already kept by Intra's
// transactions: it adds no request and returns what a read without it returns. On an index
// with Properties it cannot be kept and is refused before anything is sent.
func TestIntraReadOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail, byLast)
	if err := x.Insert(b.Ctx, emp(41, "Ada", "Lind", "ada@contoso.com")); err != nil {
		t.Fatal(err)
	}
	verify := &secondaryindex.ReadOptions{Verify: true}
	for name, read := range map[string]func(*secondaryindex.ReadOptions) iter.Seq2[Employee, error]{
		"Find": func(o *secondaryindex.ReadOptions) iter.Seq2[Employee, error] {
			return x.Find(b.Ctx, "Sales", "last", "Lind", o)
		},
		"Range": func(o *secondaryindex.ReadOptions) iter.Seq2[Employee, error] {
			return x.Range(b.Ctx, "Sales", "last", "L", "M", o)
		},
		"Prefix": func(o *secondaryindex.ReadOptions) iter.Seq2[Employee, error] {
			return x.Prefix(b.Ctx, "Sales", "last", "Li", o)
		},
	} {
		mark := b.Proxies.Table.Count()
		plain := collect(t, read(nil))
		plainRequests := requestsTo(b.Proxies.Table, mark)
		mark = b.Proxies.Table.Count()
		verified := collect(t, read(verify))
		if n := requestsTo(b.Proxies.Table, mark); n != plainRequests {
			t.Errorf("%s with Verify sent %d requests, without %d: Verify must cost nothing on Intra", name, n, plainRequests)
		}
		if len(plain) != 1 || len(verified) != 1 || plain[0] != verified[0] || verified[0].Email != "ada@contoso.com" || verified[0].Age == 0 {
			t.Errorf("%s: without Verify %+v, with %+v; want the same full entity", name, plain, verified)
		}
	}
	for name, read := range map[string]iter.Seq2[Employee, error]{
		"Find":   x.Find(b.Ctx, "Sales", "email", "ada@contoso.com", verify),
		"Range":  x.Range(b.Ctx, "Sales", "email", "a", "b", verify),
		"Prefix": x.Prefix(b.Ctx, "Sales", "email", "a", verify),
	} {
		mark := b.Proxies.Table.Count()
		var got error
		for _, err := range read {
			got = err
			break
		}
		if !errors.Is(got, errs.ErrInvalidInput) || !strings.Contains(got.Error(), "Verify") {
			t.Errorf("%s with Verify on an index with Properties: %v, want ErrInvalidInput naming Verify", name, got)
		}
		if n := requestsTo(b.Proxies.Table, mark); n != 0 {
			t.Errorf("%s: %d requests sent before the refusal", name, n)
		}
	}
	// Without Verify the partial index still reads.
	if got := collect(t, x.Find(b.Ctx, "Sales", "email", "ada@contoso.com", nil)); len(got) != 1 {
		t.Fatalf("Find without Verify found %d", len(got))
	}
}
