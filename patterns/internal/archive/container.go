package archive

import (
	"context"
	"errors"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// CreateContainer creates a container if it does not exist.
//
// Errors: ErrTransient, *repo.Error.
func CreateContainer(ctx context.Context, c *azblob.Client, p retry.Policy, name string) error {
	return retry.Do(ctx, p, retry.Op{Name: "create container", Resource: name}, func(ctx context.Context, _ int) error {
		_, err := c.CreateContainer(ctx, name, nil)
		err = errs.Wrap(err, "create container", name, "", "")
		if errors.Is(err, errs.ErrAlreadyExists) {
			return nil
		}
		return err
	})
}
