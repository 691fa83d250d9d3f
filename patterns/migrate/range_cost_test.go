package migrate

import "testing"

// rangeJobCost runs the range jobs of a migration of n entities over parts partitions,
// re-keyed by hashKeys, and returns the requests each job sent per entity (the state
// record's own reads left out): rangeJobCostWith.
func rangeJobCost(t testing.TB, n, parts int) map[string]float64 {
	return rangeJobCostWith(t, n, parts, hashKeys)
}

// TestRangeJobsSendUnderAFifthOfARequestPerEntity: the backfill, verify and clean-up
// of entities whose copies are written once read a chunk's copies and old entities with
// range queries (one per partition) and write a new partition's copies (inserts,
// detaches) and delete an old partition's entities in entity group transactions, so
// that an entity costs a fraction of a request.
func TestRangeJobsSendUnderAFifthOfARequestPerEntity(t *testing.T) {
	t.Parallel()
	cost := rangeJobCost(t, 200, 2)
	for _, kind := range []string{KindBackfill, KindVerify, KindCleanUp} {
		if cost[kind] > 0.2 {
			t.Errorf("%s: %.2f requests per entity, want at most 0.2", kind, cost[kind])
		}
	}
	t.Logf("requests per entity: %v", cost)
}
