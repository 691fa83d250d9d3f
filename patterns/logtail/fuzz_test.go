package logtail_test

import (
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/logtail"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Any key RowKey builds parses back to its time (at 100 ns) and id, and sorts newer first.
func FuzzRowKey(f *testing.F) {
	f.Add(int64(1714521600), int64(0), "C42", "claim_")
	f.Add(int64(-62135596800), int64(0), "x", "")
	f.Add(int64(253402300799), int64(999999999), "w_1", "p")
	tb, err := repo.New[Claim](testenv.TableService(f), "Fuzz", nil) // nothing is sent
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, sec, nsec int64, id, prefix string) {
		if id == "" || keys.Validate(id) != nil || keys.Validate(prefix) != nil {
			return
		}
		log, err := logtail.New(tb, &logtail.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Unix(sec, nsec%1e9).UTC()
		if at.Year() < 1 || at.Year() > 9999 {
			return
		}
		rk := log.RowKey(at, id)
		got, gotID, err := log.ParseRowKey(rk)
		if err != nil || !got.Equal(at.Truncate(100*time.Nanosecond)) || gotID != id {
			t.Fatalf("ParseRowKey(%q) = %v %q %v, want %v %q", rk, got, gotID, err, at, id)
		}
		if later := log.RowKey(at.Add(100*time.Nanosecond), id); at.Year() < 9999 && later >= rk {
			t.Fatalf("a later key %q does not sort before %q", later, rk)
		}
	})
}
