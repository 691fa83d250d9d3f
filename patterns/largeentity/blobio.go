package largeentity

import (
	"context"
	"encoding/base64"
	"errors"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// putBlobs stores new parts (step 1 of a write), at most Concurrency at once; props[i] is
// the property of parts[i].
func (s *Store[T]) putBlobs(ctx context.Context, pk, rk string, parts []*Blob, props []string) error {
	err := fanout.Do(ctx, len(parts), s.opts.Concurrency, func(ctx context.Context, i int) error {
		return s.putBlob(ctx, parts[i], pk, rk, props[i])
	})
	if err != nil {
		return err
	}
	return s.seams.after(stepUploaded)
}

// dropReplaced deletes the blobs that an entity, just written or deleted, no longer
// references (step 3). Like deleteBlobs it never fails the caller; only the test seam may
// stop it.
func (s *Store[T]) dropReplaced(ctx context.Context, names []string) error {
	if err := s.seams.after(stepWritten); err != nil {
		return err
	}
	s.deleteBlobs(ctx, names)
	return nil
}

// putBlob uploads the content of p under p.name with the metadata that ties it to its
// entity. The name is fresh, so a retry may simply store it again.
func (s *Store[T]) putBlob(ctx context.Context, p *Blob, pk, rk, property string) error {
	c := s.container.NewBlockBlobClient(p.name)
	meta := map[string]*string{
		metaPartitionKey: ptr(base64.RawURLEncoding.EncodeToString([]byte(pk))),
		metaRowKey:       ptr(base64.RawURLEncoding.EncodeToString([]byte(rk))),
		metaProperty:     ptr(base64.RawURLEncoding.EncodeToString([]byte(property))),
	}
	headers := &blob.HTTPHeaders{}
	if p.ctype != "" {
		headers.BlobContentType = ptr(p.ctype)
	}
	op := retry.Op{Name: "upload blob", Resource: s.cname + "/" + p.name, PartitionKey: pk, RowKey: rk}
	return retry.Do(ctx, s.opts.Retry, op, func(ctx context.Context, _ int) error {
		_, err := c.UploadBuffer(ctx, p.data, &blockblob.UploadBufferOptions{HTTPHeaders: headers, Metadata: meta, Concurrency: uint16(s.opts.Concurrency)})
		return errs.Wrap(err, op.Name, op.Resource, pk, rk)
	})
}

// deleteBlobs deletes blobs no entity references any more. It never fails the caller: a
// blob it cannot delete is an orphan, logged here and removed by the sweeper.
func (s *Store[T]) deleteBlobs(ctx context.Context, names []string) {
	ctx = context.WithoutCancel(ctx)
	var mu sync.Mutex
	_ = fanout.Do(ctx, len(names), s.opts.Concurrency, func(ctx context.Context, i int) error {
		if err := s.deleteBlob(ctx, names[i], nil); err != nil {
			mu.Lock()
			s.log.Warn("largeentity: blob not deleted; the sweeper will remove it",
				zap.String("container", s.cname), zap.String("blob", names[i]), zap.Error(err))
			mu.Unlock()
		}
		return nil
	})
}

// deleteBlob deletes one blob, only if its ETag is still etag when etag is set. A blob
// already gone is success.
func (s *Store[T]) deleteBlob(ctx context.Context, name string, etag *azcore.ETag) error {
	var opts *blob.DeleteOptions
	if etag != nil {
		opts = &blob.DeleteOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: etag}}}
	}
	op := retry.Op{Name: "delete blob", Resource: s.cname + "/" + name}
	return retry.Do(ctx, s.opts.Retry, op, func(ctx context.Context, _ int) error {
		_, err := s.container.NewBlobClient(name).Delete(ctx, opts)
		err = errs.Wrap(err, op.Name, op.Resource, "", "")
		if errors.Is(err, repo.ErrNotFound) {
			return nil
		}
		return err
	})
}

func ptr[V any](v V) *V { return &v }

// hasBlobs reports whether any part lives in a blob.
func hasBlobs(parts []*Blob) bool {
	for _, p := range parts {
		if p != nil && p.present && p.name != "" {
			return true
		}
	}
	return false
}
