package tablearchive

import (
	"fmt"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/repo"
)

// inKeyOrder is the restore's check of one generation's entities as its verification
// reads them (its data, or its shards one after another, in order): every line must be
// an entity (the read decodes it for the check) that t would write (keys, property
// names and sizes within the service's limits: the write refuses the others only after
// it wrote the windows before them) and whose keys come strictly after the ones before.
// An export writes the table in the service's key order and a shard holds a range of
// whole partitions, so data that matches its manifests but holds a line that is no
// entity, or one the service cannot hold, or one key twice, or keys out of order, is
// ErrArchiveCorrupt, refused before the restore writes anything
// (TestRestoreWritesNothingOfShardsWithALineThatIsNoEntity,
// TestRestoreWritesNothingOfShardsWithALineTheServiceRefuses,
// TestRestoreWritesNothingOfShardsThatHoldOneKeyTwice,
// TestRestoreWritesNothingOfShardsThatHoldOneKeyTwiceInTwoWindows). Cost: each line is
// decoded and encoded twice, once to verify and once to write. Its errors name a line by
// its place in the generation, never by its keys: an archived index table's keys hold
// the values it indexes (TestRestoreErrorOfALineOutOfKeyOrderWithholdsItsKeys).
func inKeyOrder(m Manifest, t *repo.Table[codec.Entity]) func(*codec.Entity) error {
	var pk, rk string
	line := 0
	return func(e *codec.Entity) error {
		line++
		if line > 1 && (keys.Compare(e.PartitionKey, pk) < 0 || e.PartitionKey == pk && keys.Compare(e.RowKey, rk) <= 0) {
			return fmt.Errorf("%w: generation %s of %s: entity %d does not come after the one before it in key order (a key twice or out of order)",
				ErrArchiveCorrupt, m.Generation, m.Table, line)
		}
		if err := repo.CheckTransaction(t.UpsertAction(e, nil)); err != nil {
			return fmt.Errorf("%w: generation %s of %s: entity %d is one the service cannot hold: %v",
				ErrArchiveCorrupt, m.Generation, m.Table, line, err)
		}
		pk, rk = e.PartitionKey, e.RowKey
		return nil
	}
}
