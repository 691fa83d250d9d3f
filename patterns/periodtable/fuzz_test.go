package periodtable_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
)

var fuzzSchemes = func() []periodtable.Scheme {
	quarter, _ := periodtable.Every(15 * time.Minute)
	week, _ := periodtable.Every(7 * 24 * time.Hour)
	var out []periodtable.Scheme
	for _, p := range []periodtable.Period{periodtable.Hourly, periodtable.Daily, periodtable.Weekly, periodtable.Monthly, quarter, week} {
		out = append(out, periodtable.Scheme{Prefix: "SignIns", Period: p})
	}
	return out
}()

// Every name Parse accepts is the name of the period it returns, and a valid table name.
func FuzzSchemeParse(f *testing.F) {
	for _, s := range []string{"SignIns20240501", "SignIns2024050113", "SignIns202405", "SignIns202405010445", "SignIns20240229", "SignIns99991231", "SignIns16010101", "SignIns0000", "signins20240501"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		for _, s := range fuzzSchemes {
			tb, ok := s.Parse(name)
			if !ok {
				continue
			}
			if tb.Name != name || !tableNameRule.MatchString(name) {
				t.Fatalf("%s: Parse(%q) = %v", s.Period, name, tb)
			}
			again, err := s.TableFor(tb.Start)
			if err != nil || again != tb || !tb.Start.Before(tb.End) {
				t.Fatalf("%s: Parse(%q) = %v, TableFor(start) = %v %v", s.Period, name, tb, again, err)
			}
		}
	})
}

// TableFor puts t in [Start, End), and its name parses back to the same period.
func FuzzSchemeTableFor(f *testing.F) {
	for _, sec := range []int64{0, -1, 1714521600, 253402300799, -11644473600, 951782400} {
		f.Add(sec, int64(0))
	}
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		at := time.Unix(sec, nsec%1e9).UTC()
		for _, s := range fuzzSchemes {
			tb, err := s.TableFor(at)
			if err != nil {
				if y := s.Period.Start(at).Year(); y >= 1601 && y <= 9999 {
					t.Fatalf("%s: TableFor(%v): %v", s.Period, at, err)
				}
				continue
			}
			if at.Before(tb.Start) || !at.Before(tb.End) {
				t.Fatalf("%s: %v not in %v", s.Period, at, tb)
			}
			if back, ok := s.Parse(tb.Name); !ok || back != tb {
				t.Fatalf("%s: Parse(%q) = %v %v, want %v", s.Period, tb.Name, back, ok, tb)
			}
		}
	})
}

// The table names of a scheme, the period of an instant, and back.
func ExampleScheme() {
	s := periodtable.Scheme{Prefix: "SignIns", Period: periodtable.Daily}
	t, _ := s.TableFor(time.Date(2024, 5, 1, 13, 47, 0, 0, time.UTC))
	fmt.Println(t.Name, t.Start.Format(time.DateOnly), t.End.Format(time.DateOnly))
	back, ok := s.Parse("SignIns20240502")
	fmt.Println(back.Start.Format(time.DateOnly), ok)
	_, ok = s.Parse("SignInsArchive")
	fmt.Println(ok)
	// Output:
	// SignIns20240501 2024-05-01 2024-05-02
	// 2024-05-02 true
	// false
}
