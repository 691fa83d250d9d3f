package secondaryindex

import (
	"bytes"
	"context"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/maintain"
	"github.com/tablepatterns/tablepatterns/repo"
)

// BackfillOptions configures one call of BackfillPartition. nil means the zero value,
// whose every field is its documented default.
type BackfillOptions struct {
	// After resumes a backfill after this primary RowKey: the Checkpoint.After of a run
	// that stopped. Defaults to "": the partition from its start.
	After string
	// Limit is how many primary entities the call processes at most (it stops at the end
	// of the page that reaches it). Defaults to 0: the rest of the partition.
	Limit int
	// PageSize is how many primary entities one page reads, and so how far apart the
	// checkpoints are. Defaults to 1,000 (the service's page).
	PageSize int
	// Checkpoint, if set, is called after each page with the progress so far: store it
	// where a rerun finds it (its After is the place to resume). An error from it stops
	// the backfill and is returned. Defaults to nil: the checkpoint is only returned.
	Checkpoint func(ctx context.Context, cp Checkpoint) error
}

// Checkpoint is the progress of a backfill of one partition: every primary entity whose
// RowKey is at most After has been brought in line (as of when it was read).
type Checkpoint struct {
	// PartitionKey is the partition backfilled.
	PartitionKey string `json:"pk"`
	// After is the RowKey of the last primary entity done ("" for none).
	After string `json:"after,omitempty"`
	// Done reports that the partition's end was reached.
	Done bool `json:"done,omitempty"`
	// Scanned counts the primary entities read by this call, and Written those whose
	// copies had to be written. When a page stops at a failure, Written counts its
	// entities written all the same, while After and Scanned stay at the last page done.
	Scanned, Written int `json:"-"`
}

// Drift names a kind of difference between the primary entities and their copies.
type Drift string

const (
	// Missing: an entity has a value in an index and no copy under it.
	Missing Drift = "missing"
	// Stale: the copy exists but does not hold what the entity holds (Inter: or its
	// bookkeeping does not record the entity's current version).
	Stale Drift = "stale"
	// Orphan: a copy that no entity has (the entity is gone, or has another value).
	Orphan Drift = "orphan"
	// Conflict (Intra): another live entity of the partition holds the entity's value in
	// a unique index too (data written around this package, or stored before the index
	// was added), and the copy is not proven to be this entity's: every entity of such a
	// group but the one the copy names (all of them when the copy names none, as a
	// partial copy equal to several projections). Backfill and Repair never take such a
	// copy over: change one entity's value to resolve it. It counts in Drift: lookups by
	// that value cannot find every entity that has it.
	Conflict Drift = "conflict"
	// Unindexable: an entity has a value in an index and no copy can exist, because the
	// copy's key would break the service's key rules (over 1 KiB once the index's name
	// is added, a forbidden character): a primary written around this package, which
	// refuses such values. Nothing can be listed for it, so Repair leaves it; change the
	// entity's value (or key) to resolve it. It counts in Drift: lookups by that value
	// will not find the entity.
	Unindexable Drift = "unindexable"
)

// Sample is one drifted copy found by Verify.
type Sample struct {
	// Drift is what is wrong with it.
	Drift Drift
	// Index names the index.
	Index string
	// PartitionKey and RowKey are the primary entity's (Intra: its primary copy's RowKey;
	// for an orphan, the entity the copy claims, "" when it names none).
	PartitionKey, RowKey string
	// CopyKey is the RowKey of the copy (for Missing, of the copy that should exist).
	CopyKey string
}

// Report is what Verify (and Repair) found in one partition.
type Report struct {
	// PartitionKey is the partition checked.
	PartitionKey string
	// Entities counts the primary entities and Copies the index copies read.
	Entities, Copies int
	// Missing, Stale and Orphan count the copies of each kind of drift.
	Missing, Stale, Orphan int
	// Conflict counts the entities whose value in a unique index another live entity
	// holds too (Intra; see Conflict). Repair cannot fix them and writes nothing for
	// them, but they count in Drift, as Unindexable does: the index lacks them.
	Conflict int
	// Unindexable counts, per index, the entities with a value no copy key can hold (see
	// Unindexable). Repair cannot fix them either, but they count in Drift: the index
	// lacks them.
	Unindexable int
	// Samples holds the first VerifyOptions.Samples drifted copies.
	Samples []Sample
	// Repaired counts the entities (Intra, Inter) and orphans (Intra) that Repair wrote;
	// 0 for Verify.
	Repaired int
	// found is every drift, for Repair.
	found []Sample
}

// Drift returns Missing + Stale + Orphan + Conflict + Unindexable: zero when every
// entity is found by each of its values and nothing else is found. Repair fixes the
// first three; Conflict and Unindexable need a change of the entity's value.
func (r *Report) Drift() int { return r.Missing + r.Stale + r.Orphan + r.Conflict + r.Unindexable }

func (r *Report) add(s Sample, samples int) {
	switch s.Drift {
	case Missing:
		r.Missing++
	case Stale:
		r.Stale++
	case Orphan:
		r.Orphan++
	case Conflict:
		r.Conflict++
	case Unindexable:
		r.Unindexable++
	}
	if len(r.Samples) < samples {
		r.Samples = append(r.Samples, s)
	}
	r.found = append(r.found, s)
}

// VerifyOptions configures Verify and Repair. nil means the zero value.
type VerifyOptions struct {
	// Samples bounds Report.Samples. Defaults to 20; -1 keeps none.
	Samples int
}

func (o *VerifyOptions) samples() (int, error) {
	if o == nil {
		return maintain.Samples(0)
	}
	return maintain.Samples(o.Samples)
}

func (o *BackfillOptions) withDefaults() (BackfillOptions, error) {
	var out BackfillOptions
	if o != nil {
		out = *o
	}
	if out.PageSize < 0 || out.PageSize > repo.MaxPageSize {
		return out, errs.TooLarge("BackfillOptions.PageSize", "must be between 0 (default) and the service's page size", out.PageSize, repo.MaxPageSize)
	}
	if out.Limit < 0 {
		return out, errs.Invalid("BackfillOptions.Limit", "must not be negative, got %d", out.Limit)
	}
	if out.After != "" {
		if err := codec.ValidateKey("BackfillOptions.After", out.After); err != nil {
			return out, err
		}
	}
	return out, nil
}

// forEachIn runs fn for every item of items, each writing partition part, on
// maintain.Each: at most n at once and at most 2 in part, so a backfill or repair keeps
// at most 2 transactions in flight in the partition it writes, each call's context
// marked with part, so the client's Gate slows that partition alone when it is busy.
// Every call runs (until ctx is done), and the errors of the failed ones are returned
// joined.
func forEachIn[V any](ctx context.Context, n int, part string, items []V, fn func(ctx context.Context, v V) error) error {
	return maintain.Each(ctx, items, func(V) string { return part }, maintain.EachOptions{Concurrency: n}, fn)
}

// sameProperties reports whether a stored copy holds exactly the properties of want.
func sameProperties(have, want map[string]any) bool {
	if len(have) != len(want) {
		return false
	}
	for name, w := range want {
		h, ok := have[name]
		if !ok || !sameValue(h, w) {
			return false
		}
	}
	return true
}

func sameValue(h, w any) bool {
	switch w := w.(type) {
	case time.Time:
		ht, ok := h.(time.Time)
		return ok && ht.Equal(w)
	case []byte:
		hb, ok := h.([]byte)
		return ok && bytes.Equal(hb, w)
	case float64:
		// A whole double may come back as an integer (Azurite stores it as Int32).
		switch h := h.(type) {
		case float64:
			return h == w
		case int32:
			return float64(h) == w
		case int64:
			return float64(h) == w
		}
		return false
	case int32:
		// A whole number may come back as another integer type.
		switch h := h.(type) {
		case int32:
			return h == w
		case int64:
			return h == int64(w)
		}
		return false
	}
	return h == w
}
