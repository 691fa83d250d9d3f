package secondaryindex

import (
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// checkRef refuses, before anything is sent, keys of a primary entity that this Inter
// cannot index: bad keys, and a PartitionKey inside the key space of an index partition
// that shares the primary's table.
func (x *Inter[T]) checkRef(pk, rk string) error {
	if pk == "" {
		return errs.Invalid("PartitionKey", "is empty: the index partitions are named after it")
	}
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return err
	}
	if err := codec.ValidateKey("RowKey", rk); err != nil {
		return err
	}
	for _, ix := range x.idx {
		if !ix.shared {
			continue
		}
		// The copies of partition P live in "<name>_P" of the same table: a primary stored
		// there would be overwritten by the copies of P, and removed with them. Another
		// index set over the same table (InterOptions.Kind) has names this one does not
		// know, so while any index shares the table, the whole "<letters and digits>_"
		// key space of index partitions is closed to primaries.
		if name, _, ok := strings.Cut(pk, sep); ok && isIndexName(name) {
			return errs.Invalid("PartitionKey", "%q starts with %q, the form of the index partitions in table %q (index %q is stored there): primaries may not enter it (store the indexes in another table with Index.Table)", pk, name+sep, x.primary.Name(), ix.Name)
		}
	}
	return nil
}

// isIndexName reports whether s has the form of an index name: 1 to maxNameLen ASCII
// letters and digits.
func isIndexName(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
