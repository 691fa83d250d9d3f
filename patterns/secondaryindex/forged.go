package secondaryindex

import (
	"errors"
	"slices"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
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

// copyOfEntity checks, for a Delete by a copy's key (guardRK), that the entity the copy
// named (read as old) has that copy: a row under a copy's key is stored data, and one that
// is not the entity's copy (forged, or left by a write since) must not delete it. With an
// ETag it is the caller's stale read; without, the copy named is no entity's: not found.
// The error names the entity's primary copy, never the copy's key (it holds the value).
func (x *Intra[T]) copyOfEntity(o changeOp, pk, primary string, old []string, guardRK, guardETag string) error {
	if o != opDelete || guardRK == primary || slices.Contains(old[1:], guardRK) {
		return nil
	}
	if guardETag != "" {
		return x.stale(o, pk, primary)
	}
	return &errs.ServiceError{Op: o.String(), Resource: x.Name(), PartitionKey: pk, StatusCode: 404, Code: "ResourceNotFound",
		Kind: errs.ErrNotFound, Err: errors.New("the row under the copy's key is not a copy of the entity it names")}
}
