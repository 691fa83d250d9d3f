package retry_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// After an unknown outcome only an unchanged version (nothing landed) starts over and only
// a trace of the write itself is success: absent, present or changed entities prove nothing.
func TestDecideConcludesOnlyWhatTheReadProves(t *testing.T) {
	t.Parallel()
	unknown := &errs.OutcomeUnknownError{Op: "transaction", Err: errs.ErrPreconditionFailed}
	cases := []struct {
		name string
		ev   retry.Evidence
		want string
	}{
		{"same ETag", retry.Unchanged(`W/"1"`, `W/"1"`), "again"},
		{"changed", retry.Unchanged(`W/"1"`, `W/"2"`), "unknown"},
		{"now absent", retry.Unchanged(`W/"1"`, ""), "unknown"},
		{"absent before and after", retry.Unchanged("", ""), "unknown"},
		{"one of two unchanged", retry.Unchanged(`W/"1"`, `W/"2"`).Or(retry.Unchanged(`W/"3"`, `W/"3"`)), "again"},
		{"neither unchanged", retry.Unchanged(`W/"1"`, "").Or(retry.Unchanged(`W/"3"`, `W/"4"`)), "unknown"},
		{"own trace", retry.Applied, "nil"},
	}
	for _, c := range cases {
		err := retry.Decide(unknown, c.ev)
		got := "unknown"
		switch {
		case err == nil:
			got = "nil"
		case retry.IsAgain(err):
			got = "again"
		case !errors.Is(err, errs.ErrOutcomeUnknown):
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s (%v): %s, want %s", c.name, c.ev, got, c.want)
		}
	}
	if err := retry.Decide(nil, retry.NotApplied); err != nil {
		t.Errorf("nil error: %v", err)
	}
}
