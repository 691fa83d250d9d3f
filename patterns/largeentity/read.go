package largeentity

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// GetOptions configures Get. nil means the zero value.
type GetOptions struct {
	// Eager loads every part's content with the entity (one request per out-of-line
	// part, at most Options.Concurrency at once). By default parts hold their references
	// only, and inline content; load the others on demand with Load or Open.
	Eager bool
}

// maxStaleReads bounds how often an eager Get re-reads an entity that changed under it.
const maxStaleReads = 5

// Get reads the entity with these keys (one point query). With GetOptions.Eager it also
// loads every part's content, verified against the entity's size and SHA-256; if a
// concurrent write replaced a part in between (its old blob is then gone), Get reads the
// entity again.
//
// The references read are untrusted: a part naming a blob that this Store does not
// generate for this entity and property (see ErrTampered) fails the Get before any blob
// request.
//
// Errors: errs.ErrNotFound, errs.ErrInvalidInput (keys; nothing sent), ErrTampered,
// ErrContentMismatch, ErrDangling (with errs.ErrNotFound), errs.ErrTransient, *errs.ServiceError.
func (s *Store[T]) Get(ctx context.Context, pk, rk string, opts *GetOptions) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := s.get(ctx, pk, rk)
		if err != nil || opts == nil || !opts.Eager {
			return v, err
		}
		err = s.Load(ctx, &v)
		if err == nil || !errors.Is(err, errStale) || attempt == maxStaleReads {
			var zero T
			if err != nil {
				return zero, err
			}
			return v, nil
		}
	}
}

// errStale marks a Load whose entity changed since it was read.
var errStale = errors.New("largeentity: the entity changed since it was read")

type staleError struct{ msg string }

func (e *staleError) Error() string   { return e.msg }
func (e *staleError) Unwrap() []error { return []error{errStale, repo.ErrPreconditionFailed} }

// Load loads the content of every part of v that is not in memory yet, at most
// Options.Concurrency at once, and verifies it against the entity's size and SHA-256.
// v may come from any read of the table: its references are first checked against v's
// keys (see ErrTampered), and nothing is downloaded if one fails.
//
// When a blob is missing, Load reads the entity again: if it changed since v was read,
// a concurrent write replaced the part and deleted the old blob, and Load returns an error
// wrapping errs.ErrPreconditionFailed (Get the entity again); if it did not, the error
// wraps ErrDangling and errs.ErrNotFound.
//
// Errors: ErrTampered, errs.ErrPreconditionFailed, ErrDangling, ErrContentMismatch,
// errs.ErrTransient, *errs.ServiceError.
func (s *Store[T]) Load(ctx context.Context, v *T) error {
	if v == nil {
		return errs.Invalid("entity", "is nil")
	}
	if err := s.vet(v); err != nil {
		return err
	}
	parts := s.partsOf(v, false)
	var todo []*Blob
	for _, p := range parts {
		if p != nil && p.present && !p.loaded && p.name != "" {
			todo = append(todo, p)
		}
	}
	results := make([][]byte, len(todo))
	err := fanout.Do(ctx, len(todo), s.opts.Concurrency, func(ctx context.Context, i int) error {
		data, err := s.download(ctx, *todo[i])
		results[i] = data
		return err
	})
	if errors.Is(err, repo.ErrNotFound) {
		return s.missing(ctx, v, err)
	}
	if err != nil {
		return err
	}
	for i, p := range todo {
		p.data, p.loaded = results[i], true
	}
	return nil
}

// missing tells a stale read from a dangling reference after a blob was not found.
func (s *Store[T]) missing(ctx context.Context, v *T, notFound error) error {
	pk, rk := s.table.Codec().Keys(v)
	cur, err := s.table.Get(ctx, pk, rk)
	if errors.Is(err, repo.ErrNotFound) || (err == nil && s.table.Codec().ETag(&cur) != s.table.Codec().ETag(v)) {
		return &staleError{msg: fmt.Sprintf("largeentity: %s (PartitionKey=%q, RowKey=%q) changed since it was read (a part's old blob is gone): read it again", s.table.Name(), pk, rk)}
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: %s (PartitionKey=%q, RowKey=%q): %w", ErrDangling, s.table.Name(), pk, rk, notFound)
}

// download reads one out-of-line part and verifies it.
func (s *Store[T]) download(ctx context.Context, b Blob) ([]byte, error) {
	op := retry.Op{Name: "download blob", Resource: s.cname + "/" + b.name}
	return retry.DoValue(ctx, s.opts.Retry, op, func(ctx context.Context, _ int) ([]byte, error) {
		resp, err := s.container.NewBlobClient(b.name).DownloadStream(ctx, nil)
		if err != nil {
			return nil, errs.Wrap(err, op.Name, op.Resource, "", "")
		}
		defer resp.Body.Close()
		if err := checkLength(resp.ContentLength, b); err != nil {
			return nil, err
		}
		buf := bytes.NewBuffer(make([]byte, 0, b.size))
		if _, err := io.Copy(buf, io.LimitReader(resp.Body, b.size+1)); err != nil {
			return nil, errs.Wrap(err, op.Name, op.Resource, "", "")
		}
		if err := verify(buf.Bytes(), b.size, b.sum); err != nil {
			return nil, fmt.Errorf("largeentity: blob %s: %w", b.name, err)
		}
		return buf.Bytes(), nil
	})
}

// Open returns a reader of the part's content, for content too large to hold in memory:
// streamed from its blob (one request), or from memory when inline or loaded. The reader
// verifies the content as it goes: the Read that reaches the end returns an error wrapping
// ErrContentMismatch instead of io.EOF if the size or SHA-256 differ. Close it.
//
// A part whose blob is gone (the entity was updated since b was read) gives an error
// wrapping errs.ErrNotFound: read the entity again.
//
// Only a Blob this Store vouched for is streamed: one read by Get or Load of this Store
// (which check each reference against its entity's keys) or written through it. A Blob
// decoded by a plain repo.Table read is refused with errs.ErrInvalidInput (pass its entity to
// Load, or read it with Get); one whose name does not belong to this Store with
// ErrTampered. Before returning the reader, Open checks the blob's Content-Length against
// the size the entity records (ErrContentMismatch).
//
// Errors: errs.ErrInvalidInput for the zero Blob, new content or a Blob not read through the
// Store, ErrTampered, ErrContentMismatch, errs.ErrNotFound, errs.ErrTransient, *errs.ServiceError.
func (s *Store[T]) Open(ctx context.Context, b Blob) (io.ReadCloser, error) {
	switch {
	case !b.present:
		return nil, errs.Invalid("Blob", "is zero: there is no content")
	case b.pending:
		return nil, errs.Invalid("Blob", "holds new content not written yet: use Bytes")
	case b.loaded:
		return io.NopCloser(bytes.NewReader(b.data)), nil
	case b.owner == "":
		return nil, errs.Invalid("Blob", "was not read through this Store: read its entity with Store.Get or pass it to Store.Load")
	case !s.ownPrefix(b.owner) || !generated(b.name, b.owner) || b.size > maxStoredSize:
		return nil, fmt.Errorf("largeentity: the Blob names a blob that this Store (prefix %q) does not generate: %w", s.opts.Prefix, ErrTampered)
	}
	op := retry.Op{Name: "download blob", Resource: s.cname + "/" + b.name}
	resp, err := retry.DoValue(ctx, s.opts.Retry, op, func(ctx context.Context, _ int) (blob.DownloadStreamResponse, error) {
		r, err := s.container.NewBlobClient(b.name).DownloadStream(ctx, nil)
		return r, errs.Wrap(err, op.Name, op.Resource, "", "")
	})
	if err != nil {
		return nil, err
	}
	if err := checkLength(resp.ContentLength, b); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return &verifier{body: resp.Body, want: b, h: sha256.New()}, nil
}

// checkLength compares a download's Content-Length with the size the reference records,
// before anything is read or allocated for it.
func checkLength(length *int64, b Blob) error {
	if length == nil {
		return fmt.Errorf("largeentity: blob %s: %w: the service sent no Content-Length", b.name, ErrContentMismatch)
	}
	if *length != b.size {
		return fmt.Errorf("largeentity: blob %s: %w: %d bytes, the entity says %d", b.name, ErrContentMismatch, *length, b.size)
	}
	return nil
}

// verifier hashes what it reads and checks it at the end.
type verifier struct {
	body io.ReadCloser
	want Blob
	h    hash.Hash
	n    int64
	err  error
}

func (r *verifier) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.body.Read(p)
	r.n += int64(n)
	r.h.Write(p[:n])
	if r.n > r.want.size {
		r.err = fmt.Errorf("%w: more than the entity's %d bytes", ErrContentMismatch, r.want.size)
		return n, r.err
	}
	if err == io.EOF {
		var sum [sha256.Size]byte
		r.h.Sum(sum[:0])
		switch {
		case r.n != r.want.size:
			r.err = fmt.Errorf("%w: %d bytes, the entity says %d", ErrContentMismatch, r.n, r.want.size)
		case sum != r.want.sum:
			r.err = fmt.Errorf("%w: SHA-256 differs from the entity's", ErrContentMismatch)
		default:
			r.err = io.EOF
		}
		return n, r.err
	}
	if err != nil {
		r.err = err
	}
	return n, err
}

func (r *verifier) Close() error { return r.body.Close() }
