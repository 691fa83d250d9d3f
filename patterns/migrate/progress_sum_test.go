package migrate

import (
	"fmt"
	"math"
	"testing"
)

// TestProgressSumsNeverOverflow sums, as Progress does, more valid-looking rows of one
// pass than a job could write, each with the largest count a row may hold: a sum never
// wraps past the largest count; the rows that would take it there are skipped and
// counted.
func TestProgressSumsNeverOverflow(t *testing.T) {
	t.Parallel()
	const n = math.MaxInt64/maxProgressCount + 2
	rows := make([]progressRow, n)
	for i := range rows {
		rows[i] = progressRow{Kind: KindBackfill, From: fmt.Sprintf("p%06d", i), To: fmt.Sprintf("p%06d~", i), Scanned: maxProgressCount, Copied: 1}
	}
	kinds, skipped := passes(rows)
	if len(kinds) != 1 || kinds[0].Counts["scanned"] < 0 || skipped == 0 || kinds[0].Started+skipped != n || kinds[0].Counts["copied"] != int64(kinds[0].Started) {
		t.Errorf("%d rows of %d scanned each summed into %+v, %d skipped: want no sum past the largest count, the rest skipped", n, int64(maxProgressCount), kinds, skipped)
	}
}

// TestProgressBoundsThePassesOfOverlappingRanges sums, as Progress does, more ranges of
// one kind and count of parts that all overlap than splits an operator enqueues: each
// would be a pass of its own; past maxPasses they are skipped and counted.
func TestProgressBoundsThePassesOfOverlappingRanges(t *testing.T) {
	t.Parallel()
	rows := make([]progressRow, maxPasses+3)
	for i := range rows {
		rows[i] = progressRow{Kind: KindVerify, Parts: 2, From: fmt.Sprintf("p%03d", i), Scanned: 1}
	}
	kinds, skipped := passes(rows)
	if len(kinds) != maxPasses || skipped != 3 {
		t.Errorf("%d ranges that all overlap summed into %d passes, %d skipped: want %d passes, 3 skipped", len(rows), len(kinds), skipped, maxPasses)
	}
}
