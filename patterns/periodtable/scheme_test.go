package periodtable_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/repo"
)

var tableNameRule = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{2,62}$`)

func TestSchemeNamesAndParse(t *testing.T) {
	t.Parallel()
	quarter, err := periodtable.Every(15 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 5, 1, 13, 47, 12, 0, time.FixedZone("JST", 9*3600)) // 04:47:12Z
	cases := []struct {
		period     periodtable.Period
		name       string
		start, end time.Time
	}{
		{periodtable.Hourly, "SignIns2024050104", time.Date(2024, 5, 1, 4, 0, 0, 0, time.UTC), time.Date(2024, 5, 1, 5, 0, 0, 0, time.UTC)},
		{periodtable.Daily, "SignIns20240501", time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC)},
		{periodtable.Weekly, "SignIns20240429", time.Date(2024, 4, 29, 0, 0, 0, 0, time.UTC), time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC)},
		{periodtable.Monthly, "SignIns202405", time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)},
		{quarter, "SignIns202405010445", time.Date(2024, 5, 1, 4, 45, 0, 0, time.UTC), time.Date(2024, 5, 1, 5, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		s := periodtable.Scheme{Prefix: "SignIns", Period: c.period}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		tb, err := s.TableFor(at)
		if err != nil {
			t.Fatal(err)
		}
		if tb.Name != c.name || !tb.Start.Equal(c.start) || !tb.End.Equal(c.end) {
			t.Errorf("%s: TableFor = %v, want %s [%v, %v)", c.period, tb, c.name, c.start, c.end)
		}
		if !tableNameRule.MatchString(tb.Name) {
			t.Errorf("%s: %q is not a valid table name", c.period, tb.Name)
		}
		back, ok := s.Parse(tb.Name)
		if !ok || back != tb {
			t.Errorf("%s: Parse(%q) = %v %v", c.period, tb.Name, back, ok)
		}
		// The last instant of the period is still in it; the end is in the next one.
		if last, _ := s.TableFor(tb.End.Add(-time.Nanosecond)); last.Name != tb.Name {
			t.Errorf("%s: the period's last instant is in %s", c.period, last.Name)
		}
		if next, _ := s.TableFor(tb.End); next.Name <= tb.Name || !next.Start.Equal(tb.End) {
			t.Errorf("%s: the next period %v does not follow %v (or does not sort after it)", c.period, next, tb)
		}
	}
	daily := periodtable.Scheme{Prefix: "SignIns", Period: periodtable.Daily}
	for _, name := range []string{"SignIns2024050", "SignIns202405011", "SignIns20240230", "signins20240501", "SignInsX0240501", "Other20240501", "SignIns15000101"} {
		if tb, ok := daily.Parse(name); ok {
			t.Errorf("Parse(%q) accepted: %v", name, tb)
		}
	}
	weekly := periodtable.Scheme{Prefix: "SignIns", Period: periodtable.Weekly}
	if _, ok := weekly.Parse("SignIns20240501"); ok { // a Wednesday
		t.Error("weekly Parse accepted a week that does not start on Monday")
	}
	q := periodtable.Scheme{Prefix: "SignIns", Period: quarter}
	if _, ok := q.Parse("SignIns202405010446"); ok {
		t.Error("Every(15m) Parse accepted an unaligned start")
	}
	// Before 1970 the fixed periods still floor.
	if tb, _ := q.TableFor(time.Date(1969, 12, 31, 23, 59, 0, 0, time.UTC)); tb.Name != "SignIns196912312345" {
		t.Errorf("TableFor before the epoch: %v", tb)
	}
}

func TestSchemeRefusesBadInput(t *testing.T) {
	t.Parallel()
	bad := []periodtable.Scheme{
		{Prefix: "SignIns"},                                                // zero period
		{Prefix: "", Period: periodtable.Daily},                            // empty
		{Prefix: "SignIns2", Period: periodtable.Daily},                    // ends with a digit
		{Prefix: "2SignIns", Period: periodtable.Daily},                    // starts with a digit
		{Prefix: "Sign_Ins", Period: periodtable.Daily},                    // not alphanumeric
		{Prefix: "Sign-Ins", Period: periodtable.Daily},                    // not alphanumeric
		{Prefix: strings.Repeat("a", 56), Period: periodtable.Daily},       // 56+8 > 63
		{Prefix: strings.Repeat("a", 52), Period: periodtable.Hourly},      // 52+10 ok...
		{Prefix: strings.Repeat("a", 52), Period: mustEvery(t, time.Hour)}, // 52+12 > 63
	}
	for i, s := range bad {
		err := s.Validate()
		if i == 7 { // the one valid case in the list, to show the limit is exact
			if err != nil {
				t.Errorf("%d: %v", i, err)
			}
			continue
		}
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%d (%q, %s): %v, want ErrInvalidInput", i, s.Prefix, s.Period, err)
		}
	}
	for _, d := range []time.Duration{0, time.Second, 90 * time.Second, -time.Hour} {
		if _, err := periodtable.Every(d); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("Every(%v): %v", d, err)
		}
	}
	s := periodtable.Scheme{Prefix: "SignIns", Period: periodtable.Daily}
	if _, err := s.TableFor(time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("TableFor(1500): %v", err)
	}
}

func mustEvery(t *testing.T, d time.Duration) periodtable.Period {
	p, err := periodtable.Every(d)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
