package tablearchive

import (
	"fmt"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
)

// inKeyOrder is the restore's check of one generation's entities as its verification
// reads them (its data, or its shards one after another, in order): every line must be
// an entity (the read decodes it for the check) whose keys come strictly after the ones
// before. An export writes the table in the service's key order and a shard holds a
// range of whole partitions, so data that matches its manifests but holds a line that is
// no entity, or one key twice, or keys out of order, is ErrArchiveCorrupt, refused
// before the restore writes anything
// (TestRestoreWritesNothingOfShardsWithALineThatIsNoEntity,
// TestRestoreWritesNothingOfShardsThatHoldOneKeyTwice,
// TestRestoreWritesNothingOfShardsThatHoldOneKeyTwiceInTwoWindows). Cost: each line is
// decoded twice, once to verify and once to write.
func inKeyOrder(m Manifest) func(*codec.Entity) error {
	var pk, rk string
	seen := false
	return func(e *codec.Entity) error {
		if seen && (keys.Compare(e.PartitionKey, pk) < 0 || e.PartitionKey == pk && keys.Compare(e.RowKey, rk) <= 0) {
			return fmt.Errorf("%w: generation %s of %s holds (%s, %s) after (%s, %s): a key twice or out of key order",
				ErrArchiveCorrupt, m.Generation, m.Table, e.PartitionKey, e.RowKey, pk, rk)
		}
		pk, rk, seen = e.PartitionKey, e.RowKey, true
		return nil
	}
}
