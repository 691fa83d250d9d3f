package consistency

import (
	"errors"

	"github.com/tablepatterns/tablepatterns/repo"
)

// misaddressedRefusal turns repo's *MisaddressedDeleteError (the store refused a delete
// of the transaction, 400, 404 or 412, while that entity is still there with the ETag
// the delete named) into the refusal the move counts (refusals): of the source entity
// (action 0) a *refusedDelete at version, of a companion's copy a *companionRefused that
// counts as a refusal whatever its status. Taken for the conflict its status reads as,
// it would restart the move from reads that find the same state until the retries end:
// Azurite answers 412 when the row it misaddresses (the partition's empty RowKey, or a
// prefix of the key) exists. Other errors come back as they are.
func misaddressedRefusal(err error, version string) error {
	var me *repo.MisaddressedDeleteError
	if !errors.As(err, &me) || me.Refused == nil {
		return err
	}
	if me.Refused.Index == 0 {
		return &refusedDelete{etag: version}
	}
	return &companionRefused{action: me.Refused.Index, status: me.Refused.StatusCode, code: me.Refused.Code,
		row: me.Refused.RowKey, version: version, misaddressed: true}
}
