package migrate

import (
	"go.uber.org/zap"
)

// Report is what range jobs saw, in counts and keys only (never values).
type Report struct {
	// Scanned counts the rows the job handled.
	Scanned int
	// Copied counts the copies a backfill wrote or removed and was told so: a write whose
	// answer was lost (its deadline passed, or its page stopped on another entity's
	// error and ran again, finding the copy current) is not counted.
	Copied int
	// Missing counts old entities verify found without a copy, Stale those whose copy
	// recorded an older version, Orphans copies whose old entity was gone (each repaired
	// after it was counted).
	Missing, Stale, Orphans int
	// Foreign counts rows that carry this migration's name but are not its copy of the
	// keys they record (left untouched).
	Foreign int
	// Partitions holds the counts of Missing, Stale, Orphans and Foreign by the
	// partition (old for Missing and Stale, new otherwise) they were found in.
	Partitions map[string]Counts
	// Keys lists up to MaxReportKeys of the rows counted in Partitions, as [pk, rk].
	Keys [][2]string
}

// Counts are a partition's problems in a Report.
type Counts struct{ Missing, Stale, Orphans, Foreign int }

// MaxReportKeys bounds Report.Keys.
const MaxReportKeys = 100

func (r *Report) add(o Report) {
	r.Scanned += o.Scanned
	r.Copied += o.Copied
	r.Missing += o.Missing
	r.Stale += o.Stale
	r.Orphans += o.Orphans
	r.Foreign += o.Foreign
	for pk, c := range o.Partitions {
		if r.Partitions == nil {
			r.Partitions = map[string]Counts{}
		}
		t := r.Partitions[pk]
		t.Missing, t.Stale, t.Orphans, t.Foreign = t.Missing+c.Missing, t.Stale+c.Stale, t.Orphans+c.Orphans, t.Foreign+c.Foreign
		r.Partitions[pk] = t
	}
	for _, k := range o.Keys {
		if len(r.Keys) < MaxReportKeys {
			r.Keys = append(r.Keys, k)
		}
	}
}

// Problems is the number of missing, stale, orphan and foreign rows.
func (r Report) Problems() int { return r.Missing + r.Stale + r.Orphans + r.Foreign }

func (r *Report) copied(wrote bool) {
	if wrote {
		r.Copied++
	}
}

func (r *Report) note(pk, rk string, f func(*Counts)) {
	o := Report{Partitions: map[string]Counts{}}
	c := Counts{}
	f(&c)
	o.Partitions[pk] = c
	o.Keys = [][2]string{{pk, rk}}
	o.Missing, o.Stale, o.Orphans, o.Foreign = c.Missing, c.Stale, c.Orphans, c.Foreign
	r.add(o)
}

func (r *Report) foreign(pk, rk string) { r.note(pk, rk, func(c *Counts) { c.Foreign++ }) }

func (r Report) fields() []zap.Field {
	return []zap.Field{zap.Int("scanned", r.Scanned), zap.Int("copied", r.Copied), zap.Int("missing", r.Missing),
		zap.Int("stale", r.Stale), zap.Int("orphans", r.Orphans), zap.Int("foreign", r.Foreign)}
}
