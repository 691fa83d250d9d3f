package filter

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// The re-check of a condition on an entity read: only a property of the condition's EDM
// type can match, and it compares as the service does (strings by UTF-16 code units).
func TestConditionMatchesOnlyItsOwnType(t *testing.T) {
	t.Parallel()
	g, err := codec.ParseGUID("C9DA6455-213D-42C9-9A79-3E9149A57833")
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]any{
		"I32": int32(5), "I64": int64(5), "D": 5.5, "S": "x\U0001F600", "B": true,
		"T": time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), "G": g,
	}
	for _, tc := range []struct {
		c    Condition
		want bool
	}{
		{Condition{"I32", "eq", "Edm.Int32", "5"}, true},
		{Condition{"I32", "lt", "Edm.Int32", "5"}, false},
		{Condition{"I32", "lt", "Edm.Int64", "6"}, false},
		{Condition{"I32", "lt", "Edm.Double", "6"}, false},
		{Condition{"I32", "lt", "", "6"}, false},
		{Condition{"I32", "ne", "Edm.Boolean", "true"}, false},
		{Condition{"I32", "ge", "Edm.DateTime", "2000-01-01T00:00:00Z"}, false},
		{Condition{"I32", "ne", "Edm.Guid", "c9da6455-213d-42c9-9a79-3e9149a57833"}, false},
		{Condition{"I64", "ge", "Edm.Int64", "5"}, true},
		{Condition{"I64", "gt", "Edm.Int64", "5"}, false},
		{Condition{"I64", "eq", "Edm.Int32", "5"}, false},
		{Condition{"D", "lt", "Edm.Double", "6"}, true},
		{Condition{"D", "lt", "Edm.Int32", "6"}, false},
		{Condition{"S", "lt", "Edm.String", "x\uFF01"}, true}, // UTF-16: D83D < FF01
		{Condition{"S", "gt", "", "x\uFF01"}, false},
		{Condition{"B", "eq", "Edm.Boolean", "true"}, true},
		{Condition{"B", "ne", "Edm.Boolean", "false"}, true},
		{Condition{"B", "eq", "", "true"}, false},
		{Condition{"T", "ge", "Edm.DateTime", "2019-12-31T23:59:59Z"}, true},
		{Condition{"T", "lt", "Edm.DateTime", "2020-01-01T00:00:00Z"}, false},
		{Condition{"G", "eq", "Edm.Guid", "c9da6455-213d-42c9-9a79-3e9149a57833"}, true},
		{Condition{"G", "ne", "Edm.Guid", "c9da6455-213d-42c9-9a79-3e9149a57833"}, false},
		{Condition{"G", "eq", "", "c9da6455-213d-42c9-9a79-3e9149a57833"}, false},
		{Condition{"Missing", "ne", "Edm.Int32", "5"}, false},
	} {
		c, err := tc.c.Compile("where[0]")
		if err != nil {
			t.Fatalf("%+v: %v", tc.c, err)
		}
		if got := c.Matches(&codec.Entity{Properties: props}); got != tc.want {
			t.Errorf("%+v: matches %v, want %v", tc.c, got, tc.want)
		}
	}
}

// A Timestamp condition compares the service's Timestamp (codec.Entity.Timestamp, not a
// property) and only as Edm.DateTime; an entity read without its Timestamp never matches.
func TestConditionTimestampComparesTheServiceTimestamp(t *testing.T) {
	t.Parallel()
	ts := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	e := &codec.Entity{Timestamp: ts, Properties: map[string]any{"Timestamp": "a custom value is never compared"}}
	for _, tc := range []struct {
		op, value string
		want      bool
	}{
		{"lt", "2020-01-01T00:00:00.0000001Z", true},
		{"lt", "2020-01-01T00:00:00Z", false},
		{"le", "2020-01-01T00:00:00Z", true},
		{"gt", "2019-12-31T23:59:59Z", true},
		{"eq", "2020-01-01T00:00:00Z", true},
		{"ne", "2020-01-01T00:00:00Z", false},
	} {
		c, err := Condition{TimestampProperty, tc.op, "Edm.DateTime", tc.value}.Compile("where[0]")
		if err != nil {
			t.Fatal(err)
		}
		if !c.IsTimestamp() {
			t.Errorf("Timestamp %s %s: not compiled as the service's Timestamp", tc.op, tc.value)
		}
		if got := c.Matches(e); got != tc.want {
			t.Errorf("Timestamp %s %s: %v, want %v", tc.op, tc.value, got, tc.want)
		}
		if c.Matches(&codec.Entity{}) {
			t.Errorf("Timestamp %s %s matches an entity read without its Timestamp", tc.op, tc.value)
		}
	}
	for _, typ := range []string{"", "Edm.String", "Edm.Int64", "Edm.Int32"} {
		_, err := Condition{TimestampProperty, "lt", typ, "2020-01-01T00:00:00Z"}.Compile("where[0]")
		if !errors.Is(err, errs.ErrInvalidInput) || !strings.Contains(err.Error(), "where[0].type") {
			t.Errorf("a Timestamp condition of type %q: %v, want ErrInvalidInput on where[0].type", typ, err)
		}
	}
}

// A condition is data: whatever its fields hold, the comparison it compiles to is one
// property, one operator and one literal, or an error naming the field at fault. Text
// shaped like filter syntax stays one quoted literal; a key, an unknown operator or type,
// a value that does not parse as its type are refused.
func TestConditionCannotChangeTheFilterStructure(t *testing.T) {
	t.Parallel()
	c, err := Condition{Property: "Name", Op: "eq", Value: "x' or PartitionKey ne '"}.Compile("where[0]")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Expr().String(), "Name eq 'x'' or PartitionKey ne '''"; got != want {
		t.Fatalf("filter %q, want %q", got, want)
	}
	if n := c.Expr().Comparisons(); n != 1 {
		t.Fatalf("one condition compiled to %d comparisons", n)
	}
	for _, tc := range []struct {
		c     Condition
		field string
	}{
		{Condition{Property: "N eq 1 or Age", Op: "eq", Value: "1"}, ""},
		{Condition{Property: "RowKey", Op: "gt", Value: "1"}, "where[0].property"},
		{Condition{Property: "partitionkey", Op: "gt", Value: "1"}, "where[0].property"},
		{Condition{Property: "N", Op: "or", Value: "1"}, "where[0].op"},
		{Condition{Property: "N", Op: "eq", Type: "Edm.Raw", Value: "1"}, "where[0].type"},
		{Condition{Property: "N", Op: "eq", Type: "Edm.Int32", Value: "1 or true"}, "where[0].value"},
		{Condition{Property: "N", Op: "eq", Type: "Edm.Int32", Value: "2147483648"}, "where[0].value"},
		{Condition{Property: "N", Op: "eq", Type: "Edm.Double", Value: "NaN"}, "where[0].value"},
		{Condition{Property: "N", Op: "eq", Type: "Edm.Guid", Value: "c9da6455) or (1 eq 1"}, ""},
		{Condition{Property: "N", Op: "eq", Type: "Edm.DateTime", Value: "yesterday"}, "where[0].value"},
	} {
		_, err := tc.c.Compile("where[0]")
		if !errors.Is(err, errs.ErrInvalidInput) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v, want ErrInvalidInput naming %q", tc.c, err, tc.field)
		}
	}
}

// Edm.Int64 conditions are only re-checked, never sent (Compiled.Sent); every other type
// is sent, and Type names the EDM type compared with ("" is Edm.String).
func TestConditionInt64IsOnlyRechecked(t *testing.T) {
	t.Parallel()
	for typ, want := range map[string]struct {
		sent bool
		edm  string
	}{
		"": {true, "Edm.String"}, "Edm.Int32": {true, "Edm.Int32"}, "Edm.Int64": {false, "Edm.Int64"},
		"Edm.Double": {true, "Edm.Double"}, "Edm.Boolean": {true, "Edm.Boolean"},
	} {
		value := "1"
		if typ == "Edm.Boolean" {
			value = "true"
		}
		c, err := Condition{Property: "N", Op: "ge", Type: typ, Value: value}.Compile("where[0]")
		if err != nil {
			t.Fatalf("%q: %v", typ, err)
		}
		if c.Sent() != want.sent || c.Type() != want.edm || c.Property() != "N" || c.Op() != "ge" {
			t.Errorf("%q: sent %v, type %s, want sent %v, type %s", typ, c.Sent(), c.Type(), want.sent, want.edm)
		}
	}
}
