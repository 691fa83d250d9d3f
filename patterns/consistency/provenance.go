package consistency

import (
	"math"
	"strconv"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
)

// A copy in a target table records the hop that wrote it: its source table, the
// source's ETag and Timestamp. An entity can be archived again from where it was
// archived (a tiered archive, Hot -> Warm -> Cold): the Warm entity then holds the
// first hop's provenance as properties of its own, which its Cold copy must keep
// unchanged. So each hop records its provenance under names of its own: hop 1 under
// SourceTableProperty, SourceETagProperty and SourceTimestampProperty, hop n (n > 1)
// under the same names followed by n ("ArchivedSourceETag2", ...). A move writes the
// hop after the highest one the source entity records (provenanceHop), so it never
// writes over a name the entity holds, for any number of hops; and the highest hop a
// copy records is always the hop that wrote it, which the copy rule reads
// (copyProvenance).

// provenanceNames returns the names of hop n's provenance properties.
func provenanceNames(n int) (table, etag, timestamp string) {
	if n <= 1 {
		return SourceTableProperty, SourceETagProperty, SourceTimestampProperty
	}
	s := strconv.Itoa(n)
	return SourceTableProperty + s, SourceETagProperty + s, SourceTimestampProperty + s
}

// provenanceHop returns the highest hop whose provenance properties props holds (any
// of the three names, of any type: a property the entity holds is never written over),
// 0 when none.
func provenanceHop(props map[string]any) int {
	top := 0
	for name := range props {
		for _, base := range []string{SourceETagProperty, SourceTableProperty, SourceTimestampProperty} {
			if n := hopOf(name, base); n > top {
				top = n
			}
		}
	}
	return top
}

// hopOf returns the hop whose provenance property name is (base followed by nothing or
// by a decimal number over 1 without leading zeros), 0 when it is none. A name whose
// number has no next hop in an int (math.MaxInt and above) cannot have been written by a
// move: it is no hop. Counted as one, the next hop's number would wrap around to hop 1's
// names, writing over the entity's own and leaving the forged name as the copy's highest.
func hopOf(name, base string) int {
	rest, ok := strings.CutPrefix(name, base)
	switch {
	case !ok:
		return 0
	case rest == "":
		return 1
	case rest[0] < '1' || rest[0] > '9':
		return 0
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] < '0' || rest[i] > '9' {
			return 0
		}
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 2 || n == math.MaxInt {
		return 0
	}
	return n
}

// setProvenance records, in cp (the copy of e), the hop of a move from source: the hop
// after the highest one e records.
func setProvenance(cp, e *codec.Entity, source string) {
	table, etag, ts := provenanceNames(provenanceHop(e.Properties) + 1)
	cp.Properties[table] = source
	cp.Properties[etag] = e.ETag
	if !e.Timestamp.IsZero() {
		cp.Properties[ts] = e.Timestamp.UTC()
	}
}

// copyProvenance returns the source ETag and table that the copy props records for the
// hop that wrote it (its highest hop), "" when absent or not a string.
func copyProvenance(props map[string]any) (etag, table string) {
	tn, en, _ := provenanceNames(provenanceHop(props))
	etag, _ = props[en].(string)
	table, _ = props[tn].(string)
	return etag, table
}
