package queueworker

import (
	"context"
	"errors"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/retry"
)

// CreateQueueIfNotExists creates the queue name on service and its poison queue
// (name + PoisonSuffix) where they are missing; existing queues are success. Call it at
// a program's start, as the patterns' CreateIfNotExists creates their tables: a Client
// enqueues only on a queue that exists, and a Worker reads one. opts supplies the retry
// policy and logger (nil: defaults).
//
// Errors: an *errs.InvalidInputError (ErrInvalidInput) for a nil service, a name the
// service refuses or one too long for its poison queue (63 characters at most), before
// any request; ErrTransient; the service's error otherwise.
func CreateQueueIfNotExists(ctx context.Context, service *azqueue.ServiceClient, name string, opts *ClientOptions) error {
	if service == nil {
		return errs.Invalid("service", "is nil")
	}
	if err := codec.ValidateQueueName(name); err != nil {
		return err
	}
	if err := codec.ValidateQueueName(name + PoisonSuffix); err != nil {
		return errs.Invalid("queue name", "%q is too long for its poison queue %q (63 characters at most)", name, name+PoisonSuffix)
	}
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	o.Logger = logx.OrNop(o.Logger)
	if o.Retry.Logger == nil {
		o.Retry.Logger = o.Logger
	}
	o.Retry = o.Retry.WithDefaults()
	if err := o.Retry.Validate(); err != nil {
		return err
	}
	for _, q := range []string{name, name + PoisonSuffix} {
		qc := service.NewQueueClient(q)
		err := retry.Do(ctx, o.Retry, retry.Op{Name: "create queue", Resource: q}, func(ctx context.Context, _ int) error {
			_, err := qc.Create(ctx, nil)
			err = errs.Wrap(err, "create queue", q, "", "")
			if errors.Is(err, errs.ErrAlreadyExists) {
				return nil // created by an earlier attempt, or by anyone: it exists
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
