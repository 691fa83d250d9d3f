package rangejob_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/rangejob"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A selection read from a queue is untrusted: every bad key bound, condition and
// checkpoint is refused by Validate with ErrInvalidInput naming the field, and a checkpoint
// outside the range too. No server: Validate sends nothing.
func TestSelectionRefusesBadInput(t *testing.T) {
	t.Parallel()
	ok := rangejob.Selection{PartitionKey: "Sales"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		mutate func(s *rangejob.Selection)
		field  string
	}{
		"pk and pk range": {func(s *rangejob.Selection) { s.PartitionKeyFrom = "A" }, "pk"},
		"rk bounds no pk": {func(s *rangejob.Selection) { s.PartitionKey, s.PartitionKeyFrom, s.RowKeyFrom = "", "A", "1" }, "rkFrom"},
		"empty rk range":  {func(s *rangejob.Selection) { s.RowKeyFrom, s.RowKeyTo = "5", "5" }, "rkTo"},
		"empty pk range":  {func(s *rangejob.Selection) { s.PartitionKey, s.PartitionKeyFrom, s.PartitionKeyTo = "", "b", "a" }, "pkTo"},
		"bad key":         {func(s *rangejob.Selection) { s.PartitionKey = "a/b" }, "pk"},
		"bad condition":   {func(s *rangejob.Selection) { s.Where = []filter.Condition{{Property: "N", Op: "or", Value: "1"}} }, "where[0].op"},
		"second condition": {func(s *rangejob.Selection) {
			s.Where = []filter.Condition{{Property: "N", Op: "eq", Value: "1"}, {Property: "RowKey", Op: "eq", Value: "1"}}
		}, "where[1].property"},
		"too many":       {func(s *rangejob.Selection) { s.Where = make([]filter.Condition, rangejob.MaxConditions+1) }, "where"},
		"checkpoint out": {func(s *rangejob.Selection) { s.After = &rangejob.Key{PartitionKey: "Ops", RowKey: "1"} }, "after"},
		"checkpoint below": {func(s *rangejob.Selection) {
			s.RowKeyFrom, s.After = "5", &rangejob.Key{PartitionKey: "Sales", RowKey: "4"}
		}, "after"},
		"checkpoint UTF-8": {func(s *rangejob.Selection) { s.After = &rangejob.Key{PartitionKey: "Sales", RowKey: "a\xffb"} }, "after.rk"},
		"checkpoint 1 KiB": {func(s *rangejob.Selection) {
			s.After = &rangejob.Key{PartitionKey: "Sales", RowKey: strings.Repeat("\U0001F600", 257)}
		}, "after.rk"},
		"checkpoint ≥ pkTo": {func(s *rangejob.Selection) {
			s.PartitionKey, s.PartitionKeyTo, s.After = "", "m", &rangejob.Key{PartitionKey: "n"}
		}, "after"},
	} {
		s := ok
		tc.mutate(&s)
		err := s.Validate()
		if !errors.Is(err, errs.ErrInvalidInput) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want ErrInvalidInput naming %s", name, err, tc.field)
		}
	}
	// The whole table is a selection; a job that must not run on one asks IsWholeTable.
	if whole := (rangejob.Selection{}); whole.Validate() != nil || !whole.IsWholeTable() || ok.IsWholeTable() {
		t.Fatalf("whole table: %v, IsWholeTable %v", whole.Validate(), whole.IsWholeTable())
	}
}

// The filter is built from the selection, never from its text: keys and values shaped
// like filter syntax stay literals, and the scan after a checkpoint has the same
// comparisons for any checkpoint. No server.
func TestSelectionFilterStructureIsFixed(t *testing.T) {
	t.Parallel()
	s := rangejob.Selection{PartitionKey: "x' or PartitionKey ne '", RowKeyFrom: "a", RowKeyTo: "b') or (1 eq 1",
		Where: []filter.Condition{{Property: "Name", Op: "eq", Value: "') or true or ('"}, {Property: "Big", Op: "lt", Type: "Edm.Int64", Value: "5"}}}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := "(PartitionKey eq 'x'' or PartitionKey ne ''') and (RowKey ge 'a') and (RowKey lt 'b'') or (1 eq 1') and (Name eq ''') or true or (''')"
	if got := p.Filter().String(); got != want {
		t.Fatalf("filter\n%s\nwant\n%s", got, want)
	}
	for _, at := range []rangejob.Key{{PartitionKey: s.PartitionKey, RowKey: "a"}, {PartitionKey: s.PartitionKey, RowKey: "a' or '1' eq '1"}} {
		f, err := p.Scan(&at)
		if err != nil {
			t.Fatal(err)
		}
		if f.Comparisons() != p.Filter().Comparisons()+1 || !strings.HasPrefix(f.String(), want) {
			t.Errorf("scan after %q: %s", at.RowKey, f)
		}
	}
	if sel := p.Select(); strings.Join(sel, ",") != "PartitionKey,RowKey,Name,Big" {
		t.Errorf("select %v", sel)
	}
}

// A position is any text the filter can carry inside the selection's range, an address
// or not; one outside the range is refused. No server.
func TestPositionInsideRangeOnly(t *testing.T) {
	t.Parallel()
	pkRange := rangejob.Selection{PartitionKeyTo: "m"}
	for _, k := range []rangejob.Key{{PartitionKey: "", RowKey: "1"}, {PartitionKey: "a#b", RowKey: "x/y"}, {PartitionKey: "l\uFFFF"}} {
		if err := pkRange.CheckPosition("scanned key", k); err != nil {
			t.Errorf("%q inside the range: %v", k, err)
		}
	}
	if err := rangejob.Addressable(rangejob.Key{PartitionKey: "", RowKey: "1"}); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("an empty PartitionKey is addressable: %v", err)
	}
	if err := rangejob.Addressable(rangejob.Key{PartitionKey: "a#b", RowKey: "1"}); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("a key with '#' is addressable: %v", err)
	}
	if err := rangejob.Addressable(rangejob.Key{PartitionKey: "a", RowKey: ""}); err != nil {
		t.Errorf("an empty RowKey: %v", err)
	}
	// U+1F600 (surrogates D83D DE00) sorts before U+FF01 in the service's order.
	rkRange := rangejob.Selection{PartitionKey: "P", RowKeyFrom: "x\U0001F600", RowKeyTo: "x\uFF01"}
	for k, inside := range map[rangejob.Key]bool{
		{PartitionKey: "P", RowKey: "x\U0001F600"}:  true,
		{PartitionKey: "P", RowKey: "x\U0001F600a"}: true,
		{PartitionKey: "P", RowKey: "x\uFF01"}:      false,
		{PartitionKey: "P", RowKey: "x"}:            false,
		{PartitionKey: "Q", RowKey: "x\U0001F600"}:  false,
		{PartitionKey: "m", RowKey: ""}:             false,
	} {
		if err := rkRange.CheckPosition("scanned key", k); (err == nil) != inside {
			t.Errorf("%q: %v, inside %v", k, err, inside)
		}
	}
}

// A selection's conditions are parsed once, when it is compiled for a run (Plan), not
// for every entity read: re-checking an entity against conditions of every type parses
// nothing and allocates nothing (parsing a DateTime or a Double value and boxing it
// does). A condition whose value does not parse fails the plan. Not parallel
// (testing.AllocsPerRun counts the whole process's allocations).
func TestPlanParsesConditionsOnce(t *testing.T) {
	when := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	g, err := codec.ParseGUID("C9DA6455-213D-42C9-9A79-3E9149A57833")
	if err != nil {
		t.Fatal(err)
	}
	s := rangejob.Selection{PartitionKey: "P", Where: []filter.Condition{
		{Property: "T", Op: "ge", Type: "Edm.DateTime", Value: "2019-12-31T23:59:59.5Z"},
		{Property: "D", Op: "lt", Type: "Edm.Double", Value: "6.25"},
		{Property: "Big", Op: "gt", Type: "Edm.Int64", Value: "1099511627776"},
		{Property: "I32", Op: "eq", Type: "Edm.Int32", Value: "100000"},
		{Property: "S", Op: "ne", Type: "", Value: "other"},
		{Property: "B", Op: "eq", Type: "Edm.Boolean", Value: "true"},
		{Property: "G", Op: "eq", Type: "Edm.Guid", Value: "c9da6455-213d-42c9-9a79-3e9149a57833"},
	}}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	e := &codec.Entity{PartitionKey: "P", RowKey: "1", Properties: map[string]any{
		"T": when, "D": 5.5, "Big": int64(1)<<41 + 3, "I32": int32(100000), "S": "x", "B": true, "G": g,
	}}
	if !p.Matches(e) {
		t.Fatal("the entity does not match the conditions it meets")
	}
	// The least of three counts: another goroutine of the process can only add to one.
	least := testing.AllocsPerRun(100, func() { p.Matches(e) })
	for range 2 {
		least = min(least, testing.AllocsPerRun(100, func() { p.Matches(e) }))
	}
	if least != 0 {
		t.Fatalf("re-checking one entity allocates %.0f times: a condition is parsed per entity", least)
	}
	e.Properties["I32"] = int64(100000)
	if p.Matches(e) {
		t.Fatal("an Int64 property matches an Edm.Int32 condition")
	}
	s.Where[1].Value = "six"
	if _, err := s.Plan(); !errors.Is(err, errs.ErrInvalidInput) || !strings.Contains(err.Error(), "where[1].value") {
		t.Fatalf("a Double condition of \"six\": %v", err)
	}
}
