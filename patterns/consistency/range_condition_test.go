package consistency

import (
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
)

// The re-check of a Where condition on an entity read: only a property of the
// condition's EDM type can match, and it compares as the service does (strings by UTF-16
// code units). No server.
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
		if got := tc.c.matches(props); got != tc.want {
			t.Errorf("%+v: matches %v, want %v", tc.c, got, tc.want)
		}
	}
}
