package logtail

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// appendCollisions bounds how many times Append moves to the next tick when its key is
// already taken (only possible when two writers share a WriterID).
const appendCollisions = 8

// RowKey returns the RowKey of an entry at time at with id: Prefix, the inverted ticks of
// at (.NET's string.Format("{0:D19}", DateTime.MaxValue.Ticks - at.Ticks)), "_" and id.
// Keys of later times sort first; keys of one tick sort by id. Times outside years 1 to
// 9999 are clamped, as in keys.Ticks.
func (l *Log[T]) RowKey(at time.Time, id string) string {
	return l.prefix + keys.InvertedTicksUnique(at, id)
}

// tick returns the tick for the next Append: the clock's, or one more than the last one
// used if the clock has not moved (coarse clocks) or went back (clock adjustments). Keys of
// one Log therefore never collide and keep the order of the Append calls.
func (l *Log[T]) tick() int64 {
	now := keys.Ticks(l.clock())
	l.mu.Lock()
	defer l.mu.Unlock()
	if now <= l.last {
		now = l.last + 1
	}
	l.last = now
	return now
}

// Append stores v as the newest entry of its partition, stamped with the Log's clock, and
// returns the entry's time. It sets v's RowKey (see RowKey; the id is the WriterID) and,
// if T has one, its ETag field. One request (an insert).
//
// Entries appended in the same tick do not collide: the ticks of one Log strictly increase
// (a burst faster than the clock is spread over consecutive 100 ns ticks, so the stored time
// may run ahead of the clock by that much), and the WriterID separates Logs. If the key is
// taken anyway (two Logs given one WriterID), Append moves on to the next tick. A retried
// insert whose first attempt may have been stored and that meets the key taken cannot
// tell its own entry from another Log's: Append returns errs.ErrOutcomeUnknown, unless the
// table tracks writes (repo.Options.TrackWrites), which recognises its own
// (TestAppendUnderFaultsStoredOnce). A second call is a second entry: for writes that may be run again (a queue
// handler, an import), use AppendAt with the event's own time and id.
//
// Errors: errs.ErrInvalidInput (v nil, its PartitionKey or properties break a limit; nothing
// sent), errs.ErrAlreadyExists (the key stayed taken after several ticks), errs.ErrOutcomeUnknown,
// errs.ErrTransient, *errs.ServiceError.
func (l *Log[T]) Append(ctx context.Context, v *T) (time.Time, error) {
	if v == nil {
		return time.Time{}, errs.Invalid("entry", "is nil")
	}
	var err error
	for range appendCollisions {
		at, ferr := keys.FromTicks(l.tick())
		if ferr != nil { // the clock is at DateTime.MaxValue: no later tick exists
			return time.Time{}, errs.Invalid("clock", "no tick left after %v", l.clock())
		}
		l.setRowKey(v, l.RowKey(at, l.writer))
		if err = l.table.Insert(ctx, v); !errors.Is(err, repo.ErrAlreadyExists) {
			if err != nil {
				return time.Time{}, err
			}
			return at, nil
		}
	}
	return time.Time{}, err
}

// AppendAt stores v as the entry at time at with id: the time an event happened (when an
// expense claim was submitted) rather than when it is logged. id must be unique among the
// partition's entries of that tick: the claim's id, a message id, a GUID. It sets v's RowKey
// (see RowKey) and, if T has one, its ETag field. One request.
//
// An entry is identified by its time and id, so AppendAt is idempotent: it writes with
// insert-or-replace, and running it again (a retried import, a redelivered message)
// leaves one entry, the last one written.
//
// Errors: errs.ErrInvalidInput (v nil, id empty or with characters keys may not hold, a limit
// broken; nothing sent), errs.ErrTransient, *errs.ServiceError.
func (l *Log[T]) AppendAt(ctx context.Context, at time.Time, id string, v *T) error {
	if v == nil {
		return errs.Invalid("entry", "is nil")
	}
	if id == "" {
		return errs.Invalid("id", "is empty: entries of one tick are told apart by their id")
	}
	if err := keys.Validate(id); err != nil {
		return err
	}
	l.setRowKey(v, l.RowKey(at, id))
	return l.table.Upsert(ctx, v, nil)
}

// bounds returns the RowKey range [lo, hi) of the entries with from <= time < to; a zero
// from or to leaves that side open. Later times have smaller keys, so to gives lo.
func (l *Log[T]) bounds(from, to time.Time) (lo, hi string) {
	lo, hi = l.prefix+"0", l.prefix+":" // every key of the log starts with a digit
	// Entries are stamped with whole ticks, so the bounds are the first tick at or after
	// each end: an entry at tick k has time k, which is < to for any to inside tick k, and
	// < from for any from inside it.
	if !to.IsZero() {
		// time < to  <=>  ticks < T  <=>  inverted ticks >= MaxTicks - T + 1
		lo = l.prefix + padTicks(keys.MaxTicks-ceilTicks(to)+1)
	}
	if !from.IsZero() {
		// time >= from  <=>  ticks >= F  <=>  inverted ticks < MaxTicks - F + 1
		hi = l.prefix + padTicks(max(keys.MaxTicks-ceilTicks(from)+1, 0))
	}
	return lo, hi
}

// Query returns the query of partition pk's entries with from <= time < to, newest first:
// a range query on RowKey. A zero from or to leaves that side open, so Query(pk, zero,
// zero) is the whole log of the partition. Use it with the table's Pages to browse a long
// log a page at a time with a resumable token, or add Top and Select.
func (l *Log[T]) Query(pk string, from, to time.Time) repo.Query {
	lo, hi := l.bounds(from, to)
	return repo.Query{Filter: filter.RowKeyRange(pk, lo, hi)}
}

// Newest returns the n newest entries of partition pk, newest first. For n up to
// repo.MaxPageSize (1,000) it is one request, a range query with $top=n, however long the
// log is: the point of the pattern. Larger n read ceil(n/1000) pages.
//
// Errors: errs.ErrInvalidInput (n < 1; nothing sent), errs.ErrNotFound (no such table),
// errs.ErrTransient, *errs.ServiceError.
func (l *Log[T]) Newest(ctx context.Context, pk string, n int) ([]T, error) {
	if n < 1 {
		return nil, errs.Invalid("n", "must be at least 1, got %d", n)
	}
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return nil, err
	}
	q := l.Query(pk, time.Time{}, time.Time{})
	q.Top = n
	out := make([]T, 0, min(n, repo.MaxPageSize))
	for v, err := range l.table.Query(ctx, q) {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Range returns partition pk's entries with from <= time < to, newest first, following
// continuation tokens. A zero from or to leaves that side open. It sends one request per
// page of up to 1,000 entries, and nothing until the first iteration.
//
// Errors (yielded): errs.ErrInvalidInput (pk breaks the key rules; nothing sent), errs.ErrNotFound
// (no such table), errs.ErrTransient, *errs.ServiceError.
func (l *Log[T]) Range(ctx context.Context, pk string, from, to time.Time) iter.Seq2[T, error] {
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return func(yield func(T, error) bool) {
			var zero T
			yield(zero, err)
		}
	}
	return l.table.Query(ctx, l.Query(pk, from, to))
}
