package bloblog

import (
	"context"
	"errors"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// errMoved is an append refused because the blob grew behind the writer's back.
var errMoved = errors.New("bloblog: the append blob was changed by someone else")

type blockState int

const (
	notStored blockState = iota // the blob ends where the writer thinks
	stored                      // the blob ends just after the block
	moved                       // anything else: someone else appended
)

// probe reads the blob's size to tell whether a block of n bytes appended at the writer's
// known end is stored.
func (w *Writer) probe(ctx context.Context, ab *appendable, n int) (blockState, error) {
	c := w.container.NewBlobClient(ab.name)
	op := retry.Op{Name: "get blob properties", Resource: w.cname + "/" + ab.name}
	props, err := retry.DoValue(ctx, w.opts.Retry, op, func(ctx context.Context, _ int) (blob.GetPropertiesResponse, error) {
		p, err := c.GetProperties(ctx, nil)
		return p, errs.Wrap(err, op.Name, op.Resource, "", "")
	})
	if err != nil {
		return notStored, err
	}
	var size int64
	if props.ContentLength != nil {
		size = *props.ContentLength
	}
	switch size {
	case ab.size + int64(n):
		return stored, nil
	case ab.size:
		return notStored, nil
	}
	return moved, nil
}

func isConditionNotMet(err error) bool {
	var se *errs.ServiceError
	return errors.As(err, &se) && se.StatusCode == 412
}

// resolveUnknownAppend settles an append of an earlier flush that failed ambiguously (its
// bytes lead the period's buffer) from the blob's size, and returns how many of them are
// stored: all of them, or none (the blob is then marked full when someone else appended).
func (w *Writer) resolveUnknownAppend(ctx context.Context, ab *appendable) (int, error) {
	st, err := w.probe(ctx, ab, ab.unresolved)
	if err != nil {
		return 0, err
	}
	n := 0
	switch st {
	case stored:
		n = ab.unresolved
		ab.size += int64(n)
		ab.blocks++
		w.stats.appends.Add(1)
		w.stats.bytes.Add(int64(n))
	case moved:
		ab.full = true
	}
	ab.unresolved = 0
	return n, nil
}

// appendRefused decides an append of n bytes refused at the writer's known end
// (412, the append position): an earlier try of ours whose response was lost stored it
// (nil), or someone else appended (errMoved).
func (w *Writer) appendRefused(ctx context.Context, ab *appendable, n int) error {
	switch st, err := w.probe(ctx, ab, n); {
	case err != nil:
		return err
	case st == stored:
		return nil
	default:
		return errMoved
	}
}

// createdByUs tells, when a retried create finds the name taken, whether the blob is the
// one an earlier try of ours created before its response was lost: the writer id in its
// metadata says.
func (w *Writer) createdByUs(ctx context.Context, c *appendblob.Client, resource string) (bool, error) {
	props, err := c.GetProperties(ctx, nil)
	if err != nil {
		return false, errs.Wrap(err, "get blob properties", resource, "", "")
	}
	return metaValue(props.Metadata, metaWriter) == w.id, nil
}
