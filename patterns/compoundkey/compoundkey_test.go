package compoundkey_test

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/compoundkey"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Employee is the guide's employee row: RowKey "empid_<id>".
type Employee struct {
	Department     string `table:",pk"`
	RowKey         string `table:",rk"`
	FirstName      string `table:"FirstName"`
	LastName       string `table:"LastName"`
	Age            int32  `table:"Age"`
	LastReviewYear string `table:"LastReviewYear,omitempty"`
	ETag           string `table:",etag"`
}

// bed is a table through the fault proxy holding the guide's employees and reviews.
type bed struct {
	*testbed.Bed
	emps    *repo.Table[Employee]
	reviews *compoundkey.Table[Review]
	proxy   *testenv.ProxySet
}

func setup(t *testing.T) *bed {
	t.Helper()
	tb := testbed.New(t, &testbed.Options{Proxied: true})
	reviews, err := compoundkey.New(testbed.NewTable[Review](tb, nil), reviewKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &bed{Bed: tb, emps: testbed.NewTable[Employee](tb, nil), reviews: reviews, proxy: tb.Proxies}
}

func (b *bed) review(t *testing.T, id, year string, rating int32) *Review {
	t.Helper()
	rk, err := reviewKey.Key(id, year)
	if err != nil {
		t.Fatal(err)
	}
	return &Review{Department: "Sales", RowKey: rk, ManagerRating: rating, PeerRating: rating - 1, Comments: "year " + year}
}

// All reviews of one employee: one range query with $select of the review fields, in year
// order, without the employee row and without the reviews of an employee whose id starts
// the same way.
func TestListReviewsOfOneEmployee(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	for _, id := range []string{"000123", "0001234", "000124"} {
		rk, _ := employeeKey.Key(id)
		if err := b.emps.Insert(ctx, &Employee{Department: "Sales", RowKey: rk, FirstName: "F" + id, LastName: "L", Age: 40}); err != nil {
			t.Fatal(err)
		}
		for _, year := range []string{"2013", "2011", "2012"} {
			if err := b.reviews.Insert(ctx, b.review(t, id, year, 4)); err != nil {
				t.Fatal(err)
			}
		}
	}
	mark := b.proxy.Table.Count()
	var got []string
	for r, err := range b.reviews.List(ctx, "Sales", "000123") {
		if err != nil {
			t.Fatal(err)
		}
		parts, _ := reviewKey.Parse(r.RowKey)
		got = append(got, fmt.Sprintf("%s/%s/%d/%s", parts[0], parts[1], r.ManagerRating, r.Comments))
	}
	want := []string{"000123/2011/4/year 2011", "000123/2012/4/year 2012", "000123/2013/4/year 2013"}
	if !slices.Equal(got, want) {
		t.Fatalf("reviews %q, want %q", got, want)
	}
	reqs := b.proxy.Table.Requests()[mark:]
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want one range query", len(reqs))
	}
	q, _ := url.ParseQuery(reqs[0].RawQuery)
	sel, flt := q.Get("$select"), q.Get("$filter")
	if !strings.Contains(sel, "ManagerRating") || !strings.Contains(sel, "Comments") || strings.Contains(sel, "FirstName") {
		t.Errorf("$select = %q, want the review fields only", sel)
	}
	if !strings.Contains(flt, "RowKey ge 'empid_000123_'") || !strings.Contains(flt, "RowKey lt 'empid_000123`'") {
		t.Errorf("$filter = %q", flt)
	}

	// Every review of the partition skips the employee rows that share the prefix.
	n := 0
	for r, err := range b.reviews.List(ctx, "Sales") {
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reviewKey.Parse(r.RowKey); err != nil {
			t.Fatalf("List returned %q", r.RowKey)
		}
		n++
	}
	if n != 9 {
		t.Fatalf("%d reviews in the partition, want 9", n)
	}
	one, err := b.reviews.Get(ctx, "Sales", []string{"000124", "2012"})
	if err != nil || one.Comments != "year 2012" {
		t.Fatalf("get: %+v %v", one, err)
	}
}

// A review and its employee change together: one entity group transaction.
func TestReviewAndEmployeeInOneTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	rk, _ := employeeKey.Key("000155")
	e := &Employee{Department: "Sales", RowKey: rk, FirstName: "Ken", LastName: "Kwok", Age: 23}
	if err := b.emps.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	ins, err := b.reviews.InsertAction(b.review(t, "000155", "2014", 5))
	if err != nil {
		t.Fatal(err)
	}
	e.LastReviewYear = "2014"
	if _, err := repo.Submit(ctx, ins, b.emps.UpdateAction(e, nil)); err != nil {
		t.Fatal(err)
	}
	// A second review with a stale employee ETag fails as a whole.
	ins2, _ := b.reviews.InsertAction(b.review(t, "000155", "2015", 3))
	stale := *e
	stale.ETag = `W/"datetime'2000-01-01T00%3A00%3A00Z'"`
	if _, err := repo.Submit(ctx, ins2, b.emps.UpdateAction(&stale, nil)); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("stale transaction: %v", err)
	}
	if _, err := b.reviews.Get(ctx, "Sales", []string{"000155", "2015"}); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the review of a failed transaction was stored: %v", err)
	}
	del, _ := b.reviews.DeleteAction("Sales", []string{"000155", "2014"}, nil)
	if _, err := repo.Submit(ctx, del); err != nil {
		t.Fatal(err)
	}
	// Delete is conditional on opts.ETag, as repo.Table.Delete is.
	if err := b.reviews.Insert(ctx, b.review(t, "000155", "2016", 4)); err != nil {
		t.Fatal(err)
	}
	if err := b.reviews.Delete(ctx, "Sales", []string{"000155", "2016"}, &repo.DeleteOptions{ETag: stale.ETag}); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("delete with a stale ETag: %v, want ErrPreconditionFailed", err)
	}
	if err := b.reviews.Delete(ctx, "Sales", []string{"000155", "2016"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.reviews.Get(ctx, "Sales", []string{"000155", "2016"}); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
}

// A RowKey that does not follow the layout is refused before any request.
func TestWrongKeysSendNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	mark := b.proxy.Table.Count()
	bad := &Review{Department: "Sales", RowKey: "000123_2012"}
	checks := map[string]error{
		"insert": b.reviews.Insert(ctx, bad),
		"upsert": b.reviews.Upsert(ctx, bad, nil),
		"update": b.reviews.Update(ctx, &Review{Department: "Sales", RowKey: "empid_000123"}, nil),
		"nil":    b.reviews.Insert(ctx, nil),
		"delete": b.reviews.Delete(ctx, "Sales", []string{"000123"}, nil),
	}
	_, checks["get"] = b.reviews.Get(ctx, "Sales", []string{"000123", "2012", "x"})
	_, checks["action"] = b.reviews.InsertAction(bad)
	for _, err := range b.reviews.List(ctx, "Sales", "000123", "2012") {
		checks["list of a whole key"] = err
	}
	for name, err := range checks {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if n := b.proxy.Table.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	if _, err := compoundkey.New[Review](nil, reviewKey, nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("New(nil): %v", err)
	}
}
