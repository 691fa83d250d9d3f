package periodtable

import (
	"fmt"
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

type unit uint8

const (
	unitNone unit = iota
	unitHour
	unitDay
	unitWeek
	unitMonth
	unitFixed
)

// Period is the span of time one table holds. Periods are in UTC: a "day" is a UTC day.
// (Local days are not offered: around a daylight-saving change two hours share one local
// stamp, and names must be unique.) The zero Period is invalid.
type Period struct {
	unit  unit
	every time.Duration // unitFixed only
}

// The calendar periods. Their table names end with the period's first instant in UTC:
// Hourly "2024050113", Daily "20240501", Weekly (ISO weeks, from Monday) the Monday's
// "20240429", Monthly "202405".
var (
	Hourly  = Period{unit: unitHour}
	Daily   = Period{unit: unitDay}
	Weekly  = Period{unit: unitWeek}
	Monthly = Period{unit: unitMonth}
)

// Every returns a period of fixed length d, aligned on the Unix epoch (1970-01-01T00:00Z):
// Every(15*time.Minute), Every(6*time.Hour). Table names end with the period's first
// minute, "YYYYMMDDhhmm". Prefer Daily or Weekly for days and weeks: Every(7*24*time.Hour)
// starts its weeks on Thursdays, as the epoch does.
//
// Errors: errs.ErrInvalidInput unless d is a whole number of minutes, at least one.
func Every(d time.Duration) (Period, error) {
	if d < time.Minute || d%time.Minute != 0 {
		return Period{}, errs.Invalid("period", "must be a whole number of minutes, at least one, got %v", d)
	}
	return Period{unit: unitFixed, every: d}, nil
}

// String names the period: "hourly", "daily", "weekly", "monthly" or "every 15m0s".
func (p Period) String() string {
	switch p.unit {
	case unitHour:
		return "hourly"
	case unitDay:
		return "daily"
	case unitWeek:
		return "weekly"
	case unitMonth:
		return "monthly"
	case unitFixed:
		return "every " + p.every.String()
	}
	return "invalid period"
}

// ParsePeriod returns the period String names: "hourly", "daily", "weekly", "monthly", or
// "every " followed by a duration ("every 15m0s", "every 6h"), for periods read from
// configuration or a message.
//
// Errors: errs.ErrInvalidInput for any other text.
func ParsePeriod(s string) (Period, error) {
	switch s {
	case "hourly":
		return Hourly, nil
	case "daily":
		return Daily, nil
	case "weekly":
		return Weekly, nil
	case "monthly":
		return Monthly, nil
	}
	if d, ok := strings.CutPrefix(s, "every "); ok {
		dur, err := time.ParseDuration(d)
		if err != nil {
			return Period{}, errs.Invalid("period", "%q: %v", s, err)
		}
		return Every(dur)
	}
	return Period{}, errs.Invalid("period", "%q: want hourly, daily, weekly, monthly or \"every <duration>\"", s)
}

func (p Period) valid() bool {
	return p.unit > unitNone && p.unit <= unitFixed && (p.unit != unitFixed || (p.every >= time.Minute && p.every%time.Minute == 0))
}

// Start returns the first instant of the period that holds t.
func (p Period) Start(t time.Time) time.Time {
	t = t.UTC()
	y, m, d := t.Date()
	switch p.unit {
	case unitHour:
		return time.Date(y, m, d, t.Hour(), 0, 0, 0, time.UTC)
	case unitDay:
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	case unitWeek:
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		return time.Date(y, m, d-back, 0, 0, 0, 0, time.UTC)
	case unitMonth:
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	case unitFixed:
		// In whole seconds (every is whole minutes), flooring towards minus infinity also
		// before 1970; a time.Duration from the epoch would overflow beyond 292 years.
		step := int64(p.every / time.Second)
		sec := t.Unix() // already floored: the nanoseconds are in [0, 1e9)
		n := sec / step
		if sec%step < 0 {
			n--
		}
		return time.Unix(n*step, 0).UTC()
	}
	return t
}

// End returns the first instant after the period that starts at start.
func (p Period) End(start time.Time) time.Time {
	switch p.unit {
	case unitHour:
		return start.Add(time.Hour)
	case unitDay:
		return start.AddDate(0, 0, 1)
	case unitWeek:
		return start.AddDate(0, 0, 7)
	case unitMonth:
		return start.AddDate(0, 1, 0)
	case unitFixed:
		return start.Add(p.every)
	}
	return start
}

// layout is the time layout of the period's stamp; every digit is significant, so the
// stamps of one Period have a fixed width and sort as the periods do.
func (p Period) layout() string {
	switch p.unit {
	case unitHour:
		return "2006010215"
	case unitDay, unitWeek:
		return "20060102"
	case unitMonth:
		return "200601"
	}
	return "200601021504"
}

// MaxPrefixLen is the longest table-name prefix any period allows: table names have at most
// 63 characters and the longest stamp (Every) has 12.
const MaxPrefixLen = 63 - 12

// Scheme maps periods to table names and back: Prefix followed by the period's stamp
// ("SignIns20240501"). The mapping is a pure function, so writers need no lookup, and the
// stamps have a fixed width, so the names of one Scheme sort as their periods do.
type Scheme struct {
	// Prefix starts every table name: a letter, then letters and digits, ending with a
	// letter so that the stamp that follows is unambiguous ("SignIns", not "SignIns2").
	// Give each scheme of an account its own prefix: Daily and Weekly stamps have the same
	// form, so a Daily and a Weekly scheme with one prefix would share the Mondays' tables.
	Prefix string
	// Period is the span of time one table holds.
	Period Period
}

// Validate checks the scheme.
//
// Errors: errs.ErrInvalidInput for a zero Period, or a Prefix that is empty, does not start and
// end with a letter, holds other characters than letters and digits, or is too long for
// the Period's stamp.
func (s Scheme) Validate() error {
	if !s.Period.valid() {
		return errs.Invalid("Scheme.Period", "is not a period: use Hourly, Daily, Weekly, Monthly or Every")
	}
	n := len(s.Prefix)
	if n == 0 || !isLetter(s.Prefix[0]) || !isLetter(s.Prefix[n-1]) {
		return errs.Invalid("Scheme.Prefix", "%q must start and end with a letter", s.Prefix)
	}
	for i := 0; i < n; i++ {
		if c := s.Prefix[i]; !isLetter(c) && !(c >= '0' && c <= '9') {
			return errs.Invalid("Scheme.Prefix", "%q may hold only letters and digits (table names)", s.Prefix)
		}
	}
	if limit := 63 - len(s.Period.layout()); n > limit {
		return errs.TooLarge("Scheme.Prefix", "leaves no room for the period's stamp in a 63-character table name", n, limit)
	}
	// The stamp of any period keeps the name within the rule; check one for good measure.
	return codec.ValidateTableName(s.Prefix + s.Period.layout())
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

// Table is one period table: its name and the span of time [Start, End) it holds.
type Table struct {
	Name       string
	Start, End time.Time
}

// String is "Name [Start, End)".
func (t Table) String() string {
	return fmt.Sprintf("%s [%s, %s)", t.Name, t.Start.Format(time.RFC3339), t.End.Format(time.RFC3339))
}

// TableFor returns the table of the period that holds t.
//
// Errors: errs.ErrInvalidInput when the period's start is outside years 1601 to 9999 (the range
// of Edm.DateTime; the stamp has four year digits).
func (s Scheme) TableFor(t time.Time) (Table, error) {
	start := s.Period.Start(t)
	if y := start.Year(); y < 1601 || y > 9999 {
		return Table{}, errs.Invalid("time", "%v is outside the years 1601 to 9999", t)
	}
	return Table{Name: s.Prefix + start.Format(s.Period.layout()), Start: start, End: s.Period.End(start)}, nil
}

// Parse returns the period table a table name stands for, and false for a name this scheme
// does not produce (another prefix, a stamp of another width or of an instant that does not
// start a period). Names are compared as written: table names are case-insensitive on the
// service, but a Scheme only produces one spelling.
func (s Scheme) Parse(name string) (Table, bool) {
	stamp, ok := strings.CutPrefix(name, s.Prefix)
	layout := s.Period.layout()
	if !ok || len(stamp) != len(layout) {
		return Table{}, false
	}
	for i := 0; i < len(stamp); i++ {
		if stamp[i] < '0' || stamp[i] > '9' {
			return Table{}, false
		}
	}
	start, err := time.Parse(layout, stamp)
	if err != nil || !s.Period.Start(start).Equal(start) || start.Format(layout) != stamp {
		return Table{}, false
	}
	t, err := s.TableFor(start)
	return t, err == nil && t.Name == name
}

// listFilter returns the filter on TableName that selects the scheme's tables whose
// periods may overlap [from, to); a zero from or to leaves that side open. Names of one
// scheme sort as their periods, so this is one range of names; Parse still checks each.
func (s Scheme) listFilter(from, to time.Time) filter.Expr {
	lower := filter.Ge("TableName", s.Prefix+"0")
	if !from.IsZero() {
		if t, err := s.TableFor(from); err == nil {
			lower = filter.Ge("TableName", t.Name)
		}
	}
	upper := filter.Lt("TableName", s.Prefix+":") // every stamp is digits
	if !to.IsZero() {
		// The last period overlapping [from, to) holds the instant just before to.
		if last, err := s.TableFor(to.Add(-time.Nanosecond)); err == nil {
			upper = filter.Le("TableName", last.Name)
		}
	}
	return filter.And(lower, upper)
}
