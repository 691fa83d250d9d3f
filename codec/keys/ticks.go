package keys

import (
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// MaxTicks is .NET's DateTime.MaxValue.Ticks: 9999-12-31T23:59:59.9999999Z in 100 ns
// intervals since 0001-01-01T00:00:00Z.
const MaxTicks int64 = 3155378975999999999

const (
	// unixToTicksSeconds is the number of seconds from 0001-01-01 to 1970-01-01.
	unixToTicksSeconds = 62135596800
	ticksPerSecond     = 10_000_000
	// maxUnixSeconds is 9999-12-31T23:59:59Z as Unix seconds.
	maxUnixSeconds = MaxTicks/ticksPerSecond - unixToTicksSeconds
	// invertedWidth is the "D19" width: MaxTicks has 19 digits.
	invertedWidth = 19
)

// Ticks returns t as .NET ticks: 100 ns intervals since 0001-01-01T00:00:00Z, the value of
// DateTime.Ticks for t in UTC. The sub-100 ns part of t is truncated. Times outside the
// range of .NET's DateTime (year 1 to 9999) are clamped to 0 or MaxTicks.
func Ticks(t time.Time) int64 {
	sec := t.Unix()
	switch {
	case sec < -unixToTicksSeconds:
		return 0
	case sec > maxUnixSeconds:
		return MaxTicks
	}
	return (sec+unixToTicksSeconds)*ticksPerSecond + int64(t.Nanosecond()/100)
}

// FromTicks returns the UTC time of .NET ticks, the inverse of Ticks.
//
// It returns an *errs.InvalidInputError when ticks is negative or above MaxTicks.
func FromTicks(ticks int64) (time.Time, error) {
	if ticks < 0 || ticks > MaxTicks {
		return time.Time{}, errs.Invalid("ticks", "%d is outside [0, %d]", ticks, MaxTicks)
	}
	sec := ticks/ticksPerSecond - unixToTicksSeconds
	nsec := (ticks % ticksPerSecond) * 100
	return time.Unix(sec, nsec).UTC(), nil
}

// InvertedTicks returns the log tail pattern's RowKey for t (the Azure Table storage design guide): MaxTicks minus
// Ticks(t), zero-padded to 19 digits, the same string as .NET's
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - t.Ticks). Newer times sort first, so a
// query with $top=n returns the n most recent entities of a partition.
//
// Two entities written in the same 100 ns tick (or with a clock coarser than that, which
// is common) get the same value and the second insert fails with "already exists". When
// that can happen, make the key unique with InvertedTicksUnique, or with Join(
// InvertedTicks(t), id). Build the key once, before any retry, so that a retried insert
// reuses it.
//
// Times outside year 1 to 9999 are clamped as in Ticks.
func InvertedTicks(t time.Time) string {
	return padUint(uint64(MaxTicks-Ticks(t)), invertedWidth)
}

// FromInvertedTicks returns the UTC time encoded by InvertedTicks.
//
// It returns an *errs.InvalidInputError when s is not exactly 19 digits or encodes a value
// above MaxTicks.
func FromInvertedTicks(s string) (time.Time, error) {
	if len(s) != invertedWidth {
		return time.Time{}, errs.Invalid("s", "inverted ticks have %d digits, got %d characters", invertedWidth, len(s))
	}
	v, err := parseDigits("s", s)
	if err != nil {
		return time.Time{}, err
	}
	if v > uint64(MaxTicks) {
		return time.Time{}, errs.Invalid("s", "%q is above DateTime.MaxValue.Ticks", s)
	}
	return FromTicks(MaxTicks - int64(v))
}

// InvertedTicksUnique returns InvertedTicks(t) + "_" + id: a log tail RowKey that stays
// unique when several entities share a tick, as long as id is unique among them (an
// entity ID, a UUID, a writer ID plus a sequence number). Because the ticks have a fixed
// width, the keys still sort newest first whatever id holds; entities of the same tick
// sort by id. id must contain only characters allowed in keys (see Validate); the codec
// refuses the key otherwise.
func InvertedTicksUnique(t time.Time, id string) string {
	return InvertedTicks(t) + "_" + id
}

// SplitInvertedTicksUnique returns the time and the id of a key made by
// InvertedTicksUnique.
//
// It returns an *errs.InvalidInputError when key does not start with 19 digits and "_",
// or for the reasons FromInvertedTicks gives.
func SplitInvertedTicksUnique(key string) (time.Time, string, error) {
	if len(key) < invertedWidth+1 || key[invertedWidth] != '_' {
		return time.Time{}, "", errs.Invalid("key", "want 19 digits, \"_\" and an id")
	}
	t, err := FromInvertedTicks(key[:invertedWidth])
	if err != nil {
		return time.Time{}, "", err
	}
	return t, strings.Clone(key[invertedWidth+1:]), nil
}
