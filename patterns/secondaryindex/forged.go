package secondaryindex

import (
	"strings"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"go.uber.org/zap"
)

// isCopyKeyOf reports whether k is the key of a copy of the primary entity rk: two parts
// (keys.Join(value, rk)), a non-empty value, rk last; never a ref.
func isCopyKeyOf(k, rk string) bool {
	if strings.HasPrefix(k, refPrefix) {
		return false
	}
	parts, err := keys.Split(k)
	return err == nil && len(parts) == 2 && parts[0] != "" && parts[1] == rk
}

// forgedRef reports whether the ref of the entity rk in the index partition part names,
// as the copy written (have), a row that is not a copy of that entity: another entity's
// copy, or a ref. A ref is stored data: such a ref is rewritten and the row it names left
// alone, with a warning.
func (x *Inter[T]) forgedRef(ix *interIndex[T], part, rk, have string) bool {
	if have == "" || isCopyKeyOf(have, rk) {
		return false
	}
	x.opts.Table.Logger.Warn("secondaryindex: a ref names a row that is not a copy of its entity; the row is left alone and the ref rewritten",
		zap.String("index", ix.Name), zap.String("partitionKey", part), zap.String("rowKey", rk))
	return true
}
