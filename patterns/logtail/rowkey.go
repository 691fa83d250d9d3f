package logtail

import (
	"reflect"
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// rowKeySetter returns a function that stores a RowKey into a *T. The log owns the RowKey
// of its entries, so it must write it; package codec maps T but exposes no key setter. The
// field is found by the codec's own rules (the "rk" tag option, else a string field named
// RowKey) and the result is then checked against the codec itself: a probe value is set
// and read back with Codec.Keys. A type the two disagree on is refused at construction
// rather than written with a wrong key.
func rowKeySetter[T any](c *codec.Codec[T]) (func(*T, string), error) {
	rt := reflect.TypeFor[T]()
	var tagged, named []reflect.StructField
	for _, f := range reflect.VisibleFields(rt) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		tag, hasTag := f.Tag.Lookup("table")
		if tag == "-" {
			continue
		}
		if hasTag {
			_, opts, _ := strings.Cut(tag, ",")
			for _, o := range strings.Split(opts, ",") {
				if o == "rk" {
					tagged = append(tagged, f)
				}
			}
		}
		if f.Name == "RowKey" && (!hasTag || !strings.Contains(tag, ",")) {
			named = append(named, f)
		}
	}
	cands := tagged
	if len(cands) == 0 {
		cands = named
	}
	if len(cands) != 1 || cands[0].Type.Kind() != reflect.String {
		return nil, errs.Invalid("RowKey", "cannot find the string RowKey field of %s", rt)
	}
	index := cands[0].Index
	set := func(v *T, rk string) {
		f, err := reflect.ValueOf(v).Elem().FieldByIndexErr(index)
		if err == nil {
			f.SetString(rk)
		}
	}
	var probe T
	const want = "logtail-probe"
	if _, err := reflect.ValueOf(&probe).Elem().FieldByIndexErr(index); err != nil {
		return nil, errs.Invalid("RowKey", "the RowKey field of %s is reached through an embedded pointer; embed the struct by value", rt)
	}
	set(&probe, want)
	if _, rk := c.Keys(&probe); rk != want {
		return nil, errs.Invalid("RowKey", "cannot find the RowKey field of %s that codec maps", rt)
	}
	return set, nil
}

// tickWidth is the width of the inverted ticks at the start of every entry key ("D19").
const tickWidth = 19

// ParseRowKey returns the time and the id of an entry's RowKey.
//
// Errors: errs.ErrInvalidInput when rk is not a key of this log (wrong prefix, not 19 digits
// and "_", ticks above DateTime.MaxValue).
func (l *Log[T]) ParseRowKey(rk string) (time.Time, string, error) {
	rest, ok := strings.CutPrefix(rk, l.prefix)
	if !ok {
		return time.Time{}, "", errs.Invalid("RowKey", "%q does not start with the log's prefix %q", rk, l.prefix)
	}
	return keys.SplitInvertedTicksUnique(rest)
}

// TimeOf returns the time of the entry v from its RowKey.
//
// Errors: as ParseRowKey.
func (l *Log[T]) TimeOf(v *T) (time.Time, error) {
	_, rk := l.table.Codec().Keys(v)
	at, _, err := l.ParseRowKey(rk)
	return at, err
}

// maxTickTime is the time of keys.MaxTicks, the last tick an entry can be stamped with.
var maxTickTime, _ = keys.FromTicks(keys.MaxTicks)

// ceilTicks returns the first tick at or after t: 0 before year 1, and MaxTicks+1 after
// the last tick (so that a "to" beyond year 9999 keeps an entry stamped at the maximum).
func ceilTicks(t time.Time) int64 {
	if t.After(maxTickTime) {
		return keys.MaxTicks + 1
	}
	k := keys.Ticks(t)
	if k > 0 && t.Nanosecond()%100 != 0 {
		k++
	}
	return k
}

func padTicks(n int64) string {
	var b [tickWidth]byte
	for i := tickWidth - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[:])
}
