package repo

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"sync"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Write tracking: exact recognition of a retried write's own success.
//
// A retry of an insert, conditional update or conditional delete that follows a failure
// which may have been applied (retry.MayHaveApplied) can meet 409, 412 or 404 because of its
// own earlier success, or because of another writer: content cannot tell them apart (two
// increments of 5 both write 6). With Options.TrackWrites, every insert and conditional update
// stores a random per-write id in a reserved property, modelled on the tracking id of the
// Azure Cosmos DB SDKs' non-idempotent write retries. The property holds the most recent
// write ids of the entity, newest first, so that a retry also recognises its write after
// other writers built on it:
//
//	TpWriteIDs: "Jx3...Q Ab9...c +Zq0...1"     (space-separated; "+" marks the insert;
//	                                           a trailing "?" marks a chain whose
//	                                           earlier writes are unknown)
//
// Inserts and conditional updates carry ids: a conditional update carries the history of
// the version it replaces (read by this Table: a Get or query of a tracked Table remembers
// the histories of the versions it saw, bounded), or starts a chain with "?" when it did not
// see that version. Upserts and unconditional updates are idempotent and carry none: a
// merge leaves the stored history as it is (still true), a replace removes it.
//
// What a retry concludes after an unanswered attempt: its id in the stored history proves
// the write happened (success). Nothing proves the opposite: the history is data that any
// writer of the entity can change, so its absence leaves ErrOutcomeUnknown. A tracked table
// therefore never reports success for a write that did not happen, nor a refusal for one
// that did, and answers "unknown" only for writes that did not land or whose trace was lost
// (a history overflowed, or overwritten by a writer that does not track).

// DefaultWriteIDProperty is the property that holds the write history of a tracked table.
const DefaultWriteIDProperty = "TpWriteIDs"

// DefaultWriteHistory is how many write ids a tracked entity keeps.
const DefaultWriteHistory = 16

// writeIDLen is the length of one id: 8 random bytes in unpadded base64url.
const writeIDLen = 11

// trackerCapacity bounds the histories a Table remembers (in two generations).
const trackerCapacity = 4096

// tracker is the write tracking state of one table, shared by its OfType and Project views.
type tracker struct {
	prop string
	keep int

	mu       sync.Mutex
	cur, old map[version]string // the history of each version seen
}

// version is one version of an entity: its keys and its ETag. Keyed by version, not by
// entity, so that writers sharing a Table that read different versions of one entity each
// find the history of the version they replace.
type version struct{ pk, rk, etag string }

func newTracker(prop string, keep int) *tracker {
	return &tracker{prop: prop, keep: keep, cur: make(map[version]string)}
}

func (tr *tracker) remember(pk, rk, etag, hist string) {
	if etag == "" || !validHistory(hist) {
		return
	}
	// A stored history is untrusted: keep no more than this Table would write.
	hist = tr.trim(hist)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.cur) >= trackerCapacity {
		tr.old, tr.cur = tr.cur, make(map[version]string, trackerCapacity/2)
	}
	tr.cur[version{pk, rk, etag}] = hist
}

// lookup returns the history of one version, if it was seen.
func (tr *tracker) lookup(pk, rk, etag string) (string, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	h, ok := tr.cur[version{pk, rk, etag}]
	if !ok {
		h, ok = tr.old[version{pk, rk, etag}]
	}
	return h, ok
}

// observe remembers the history of one entity read from the service (its JSON as returned,
// with odata.etag). Malformed or absent histories are ignored: they are untrusted input.
func (tr *tracker) observe(data []byte, etag string) {
	v, err := codec.StringProperties(data, "PartitionKey", "RowKey", "odata.etag", tr.prop)
	if err != nil {
		return
	}
	if etag == "" {
		etag = v[2]
	}
	tr.remember(v[0], v[1], etag, v[3])
}

// newWriteID returns a fresh random id.
func newWriteID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// plan sets w's write id, the history it stores and the id of the version it replaces.
func (tr *tracker) plan(w *writeAction) {
	w.writeID = newWriteID()
	switch {
	case w.kind == kindInsert:
		w.hist = "+" + w.writeID
	default: // a conditional update
		if h, ok := tr.lookup(w.pk, w.rk, w.ifMatch); ok {
			w.hist = tr.trim(w.writeID + " " + h)
			break
		}
		// A version this Table did not read: its history is unknown.
		w.hist = w.writeID + " ?"
	}
}

// trim keeps the newest keep write ids; a chain cut short ends with "?". The "?" is not an
// id and takes no place of one: a write is recognised until keep writes landed after it
// (Options.WriteHistory).
func (tr *tracker) trim(hist string) string {
	entries := strings.Fields(hist)
	ids := len(entries)
	if ids > 0 && entries[ids-1] == "?" {
		ids--
	}
	if ids <= tr.keep {
		return hist
	}
	return strings.Join(entries[:tr.keep], " ") + " ?"
}

// validHistory checks a stored history strictly: it comes from storage, so from whoever
// could write the entity.
func validHistory(hist string) bool {
	if hist == "" || len(hist) > 64*1024 {
		return false
	}
	entries := strings.Split(hist, " ")
	for i, e := range entries {
		if e == "?" {
			if i != len(entries)-1 {
				return false
			}
			continue
		}
		e = strings.TrimPrefix(e, "+")
		if len(e) != writeIDLen {
			return false
		}
		for j := 0; j < len(e); j++ {
			c := e[j]
			if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// applied reads w's entity and reports whether w's unanswered attempt is known to have
// been applied: its write id is in the stored history. Nothing else is proof either way:
// the history is data anyone who can write the entity can change (a foreign copy written
// back with an old history, a merge that leaves it as it is, a delete and a re-insert), so
// its absence proves nothing, and the caller answers ErrOutcomeUnknown.
func (w *writeAction) applied(ctx context.Context) (bool, error) {
	if w.writeID == "" {
		return false, nil
	}
	resp, err := w.client.GetEntity(ctx, w.pk, w.rk, nil)
	if err != nil {
		err = errs.Wrap(err, "get", w.table, w.pk, w.rk)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	v, err := codec.StringProperties(resp.Value, w.track.prop)
	if err != nil || !validHistory(v[0]) {
		return false, nil
	}
	w.track.remember(w.pk, w.rk, string(resp.ETag), v[0])
	for _, e := range strings.Fields(v[0]) {
		if strings.TrimPrefix(e, "+") == w.writeID {
			return true, nil
		}
	}
	return false, nil
}

// supersededETag is set on a value whose write is known to have happened only through a
// retry: its own ETag was in the lost response, and the stored version may be another
// writer's since (a merge keeps the history as it is, so even "our id first" proves
// nothing). It matches no version, so the caller's next conditional write fails with
// ErrPreconditionFailed and re-reads, instead of overwriting a newer version.
const supersededETag = `W/"datetime'0001-01-01T00%3A00%3A00.0000000Z'"`

// withHistory appends the tracking property to an encoded entity body.
func withHistory(body []byte, prop, hist string) ([]byte, error) {
	n := len(body)
	if n < 2 || body[n-1] != '}' {
		return nil, errs.Invalid("entity", "encoded body is not a JSON object")
	}
	out := make([]byte, 0, n+len(prop)+len(hist)+8)
	out = append(out, body[:n-1]...)
	out = append(out, ",\""...)
	out = append(out, prop...)
	out = append(out, "\":\""...)
	out = append(out, hist...)
	out = append(out, "\"}"...)
	return out, nil
}

// TracksWrites reports whether the table was built with Options.TrackWrites: the patterns
// whose exactness depends on it (dataseries, wideentity) check it at construction.
func (t *Table[T]) TracksWrites() bool { return t.track != nil }

// WriteIDProperty returns the name of the property that holds the write history of a
// tracked table (Options.WriteIDProperty, DefaultWriteIDProperty unless set), or "" when
// the table does not track writes. The table refuses to write an entity that carries this
// property (ErrInvalidInput, nothing sent), and its reads never show it: a pattern that
// adds properties of its own checks that they do not collide with it.
func (t *Table[T]) WriteIDProperty() string {
	if t.track == nil {
		return ""
	}
	return t.track.prop
}

// hideHistory removes the write-tracking property from one entity read from the service,
// before a caller's decoder sees it (GetFunc, QueryFunc): the typed paths hide it through
// the codec (codec.Codec.WithReserved).
func (t *Table[T]) hideHistory(data []byte) ([]byte, error) {
	if t.track == nil {
		return data, nil
	}
	out, _, err := codec.WithoutProperties(data, t.track.prop)
	return out, err
}
