package repo_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// sealedEmployee has an encrypted field.
type sealedEmployee struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	SSN        string `table:"SSN,encrypt"`
}

// Misspelled names and values of the wrong EDM type fail before any request: the fault
// proxy counts none.
func TestTypedFilterRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	emps, err := repo.New[Employee](b.clients.Tables, b.name, nil)
	if err != nil {
		t.Fatal(err)
	}
	sales := filter.PartitionKey("Sales")
	for _, tc := range []struct {
		name  string
		q     repo.Query
		field string
		says  []string
	}{
		{"misspelled", repo.Query{Filter: filter.And(sales, filter.Eq("LastNme", "Jones"))}, "LastNme", []string{`did you mean "LastName"`, "repo_test.Employee"}},
		{"misspelled under not", repo.Query{Filter: filter.Not(filter.Or(filter.Eq("LastName", "a"), filter.Eq("Agee", int32(3))))}, "Agee", []string{`"Age"`}},
		{"Go field name", repo.Query{Filter: filter.Eq("Department", "Sales")}, "Department", []string{`stored as "PartitionKey"`}},
		{"string for a DateTime", repo.Query{Filter: filter.Gt("HireDate", "2012-01-01")}, "HireDate", []string{"Edm.DateTime", "Edm.String", "time.Time"}},
		{"int for an Int64", repo.Query{Filter: filter.Gt("Salary", 5000)}, "Salary", []string{"Edm.Int64", "Edm.Int32", "int64("}},
		{"double for an Int32", repo.Query{Filter: filter.Eq("Age", 34.0)}, "Age", []string{"Edm.Int32", "Edm.Double"}},
		{"number for a key", repo.Query{Filter: filter.Eq("RowKey", int64(7))}, "RowKey", []string{"Edm.String"}},
		{"string for Timestamp", repo.Query{Filter: filter.Gt("Timestamp", "yesterday")}, "Timestamp", []string{"Edm.DateTime"}},
		{"unknown select", repo.Query{Select: []string{"FirstName", "Salry"}}, "Salry", []string{`"Salary"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			for _, err = range emps.Query(b.ctx, tc.q) {
				break
			}
			var ie *errs.InvalidInputError
			if !errors.Is(err, repo.ErrInvalidInput) || !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("err = %v; want an InvalidInputError naming %s", err, tc.field)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
			if _, err := emps.Collect(b.ctx, tc.q); !errors.Is(err, repo.ErrInvalidInput) {
				t.Errorf("Collect: %v", err)
			}
		})
	}
	if n := b.proxy.Count(); n != 0 {
		t.Fatalf("%d requests sent for refused queries, want 0", n)
	}

	// The right names and types pass and run.
	if err := emps.Insert(b.ctx, employee("Sales", "1")); err != nil {
		t.Fatal(err)
	}
	ok := filter.And(sales, filter.Eq("LastName", "Jones"), filter.Eq("Age", int32(34)), filter.Gt("Salary", int64(5000)),
		filter.Lt("HireDate", time.Now()), filter.Gt("Timestamp", time.Now().Add(-time.Hour)))
	got, err := emps.Collect(b.ctx, repo.Query{Filter: ok, Select: []string{"FirstName", "Timestamp"}})
	if err != nil || len(got) != 1 {
		t.Fatalf("a well-typed query: %d entities, %v", len(got), err)
	}
}

// Dynamic entities keep free-form filters: unknown names pass, and an encrypted field
// cannot be filtered on.
func TestTypedFilterDynamicAndEncrypted(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	dyn, err := repo.New[codec.Entity](b.clients.Tables, b.name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Collect(b.ctx, repo.Query{Filter: filter.Eq("AnythingAtAll", int64(1)), Select: []string{"Whatever"}}); err != nil {
		t.Fatalf("dynamic query refused: %v", err)
	}
	key, _ := codec.NewLocalKey("k1", make([]byte, 32))
	secret, err := repo.New[sealedEmployee](b.clients.Tables, b.name, &repo.Options{Encryption: &codec.Encryption{Key: key}})
	if err != nil {
		t.Fatal(err)
	}
	before := b.proxy.Count()
	_, err = secret.Collect(b.ctx, repo.Query{Filter: filter.Eq("SSN", "123-45-6789")})
	if !errors.Is(err, repo.ErrInvalidInput) || !strings.Contains(err.Error(), "encrypted") || strings.Contains(err.Error(), "123-45") {
		t.Fatalf("filter on an encrypted field: %v", err)
	}
	if b.proxy.Count() != before {
		t.Fatal("a request was sent for a refused query")
	}
}

// A projection filters on the properties of the type it was projected from.
func TestTypedFilterOfAProjection(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	emps, err := repo.New[Employee](b.clients.Tables, b.name, nil)
	if err != nil {
		t.Fatal(err)
	}
	type Name struct {
		Department string `table:",pk"`
		EmployeeID string `table:",rk"`
		FirstName  string `table:"FirstName"`
	}
	names, err := repo.Project[Name](emps)
	if err != nil {
		t.Fatal(err)
	}
	if err := emps.Insert(b.ctx, employee("Sales", "1")); err != nil {
		t.Fatal(err)
	}
	got, err := names.Collect(b.ctx, repo.Query{Filter: filter.Gt("Salary", int64(1000))})
	if err != nil || len(got) != 1 || got[0].FirstName != "Jun" {
		t.Fatalf("projection filtered on a property of the source type: %+v %v", got, err)
	}
	mark := b.proxy.Count()
	if _, err := names.Collect(b.ctx, repo.Query{Filter: filter.Gt("Salry", int64(1000))}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("misspelled name on a projection: %v", err)
	}
	if b.proxy.Count() != mark {
		t.Fatal("a request was sent for a refused query")
	}
}

// Values with quotes and OData syntax never change the filter's structure.
func TestTypedFilterValuesNeverChangeTheFilterStructure(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	emps := table[Employee](t, b, nil)
	for _, id := range []string{"1", "2"} {
		if err := emps.Insert(b.ctx, employee("Sales", id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{"x' or RowKey ne '", "x'' or true or ''", "Jones' or 'a' eq 'a", "')or(true", "%27 or true", "\u02bc or true", "x\x00' or true"} {
		got, err := emps.Collect(b.ctx, repo.Query{Filter: filter.And(filter.PartitionKey("Sales"), filter.Eq("LastName", v))})
		if err == nil && len(got) != 0 {
			t.Errorf("value %q matched %d entities", v, len(got))
		}
	}
	mark := b.proxy.Count()
	for _, name := range []string{"LastName eq 'x' or RowKey", "Last'Name", "(LastName)", "LastName\u0000"} {
		if _, err := emps.Collect(b.ctx, repo.Query{Filter: filter.Eq(name, "x")}); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("name %q: %v", name, err)
		}
		if _, err := emps.Collect(b.ctx, repo.Query{Select: []string{name}}); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("select %q: %v", name, err)
		}
	}
	if n := requestsSince(b.proxy, mark); n != 0 {
		t.Errorf("%d requests for refused queries", n)
	}
}

// Keyword-like stored names the codec accepts: can a query filter on them?
type Keywordy struct {
	PK  string `table:",pk"`
	RK  string `table:",rk"`
	Sub int32  `table:"Sub"`
	Not bool   `table:"Not"`
	Inf string `table:"Inf"`
}
