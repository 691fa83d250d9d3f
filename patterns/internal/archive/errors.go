package archive

import (
	"errors"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// IsContainerNotFound reports a 404 ContainerNotFound.
func IsContainerNotFound(err error) bool {
	var se *errs.ServiceError
	return errors.As(err, &se) && se.Code == "ContainerNotFound"
}

// IsTableNotFound reports a 404 TableNotFound (not an entity's 404), from a single
// request (*errs.ServiceError) or from an action of a transaction (*repo.ActionError).
func IsTableNotFound(err error) bool {
	var se *errs.ServiceError
	var ae *repo.ActionError
	return errors.As(err, &se) && se.Code == "TableNotFound" || errors.As(err, &ae) && ae.Code == "TableNotFound"
}
