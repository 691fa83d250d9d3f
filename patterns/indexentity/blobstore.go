package indexentity

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/retry"
)

// maxBlobName is the service's limit on blob names, in characters.
const maxBlobName = 1024

// blobContentType is the type of an index blob: one "PartitionKey<TAB>RowKey" line per
// entity, sorted (keys cannot contain tabs or newlines, so no escaping is needed).
const blobContentType = "text/tab-separated-values; charset=utf-8"

// BlobStoreOptions configures a BlobStore. nil means the zero value, whose every field is
// its documented default.
type BlobStoreOptions struct {
	// Prefix starts every blob name, e.g. "lastname/" to keep several indexes in one
	// container. At most 256 characters, no control characters.
	Prefix string
	// Retry is the policy for transient failures of each blob request. Defaults to
	// retry's defaults.
	Retry retry.Policy
	// Conflict is the backoff of the read-modify-write loop when another writer changed
	// the blob first. Zero fields take retry.Conflict()'s values.
	Conflict retry.Policy
	// Logger receives one entry per retry. Defaults to zap.NewNop().
	Logger *zap.Logger
}

// BlobStore is option 1 of the guide's index entities pattern: one blob per indexed value
// (a last name), listing the PartitionKey and RowKey of every entity with that value,
// across the whole table. A blob has no 64 KiB or 1 MiB limit, so this is the store for
// lists that would outgrow entities; every change rewrites the value's blob, conditional on
// its ETag (If-Match, or If-None-Match: * for the first entity of a value), and an empty
// list deletes the blob. Use it as the Store of an Eventual index. It is safe for
// concurrent use.
type BlobStore struct {
	client    *azblob.Client
	container string
	prefix    string
	retry     retry.Policy
	conflict  retry.Policy
}

// NewBlobStore returns the store of index blobs in container. It sends nothing (see
// CreateIfNotExists).
//
// Errors: errs.ErrInvalidInput for a nil client, an empty container name, a bad Prefix or an
// invalid policy.
func NewBlobStore(client *azblob.Client, container string, opts *BlobStoreOptions) (*BlobStore, error) {
	var o BlobStoreOptions
	if opts != nil {
		o = *opts
	}
	if client == nil {
		return nil, errs.Invalid("blob client", "is nil")
	}
	if container == "" {
		return nil, errs.Invalid("container", "is empty")
	}
	if !utf8.ValidString(o.Prefix) || utf8.RuneCountInString(o.Prefix) > 256 || strings.ContainsFunc(o.Prefix, isControl) {
		return nil, errs.Invalid("BlobStoreOptions.Prefix", "must be at most 256 characters of valid UTF-8 without control characters")
	}
	logger := logx.OrNop(o.Logger)
	rp := o.Retry
	if rp.Logger == nil {
		rp.Logger = logger
	}
	rp = rp.WithDefaults()
	if err := rp.Validate(); err != nil {
		return nil, err
	}
	cp := conflictPolicy(o.Conflict, logger)
	if err := cp.Validate(); err != nil {
		return nil, err
	}
	return &BlobStore{client: client, container: container, prefix: o.Prefix, retry: rp, conflict: cp}, nil
}

func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

// Container returns the container's name.
func (s *BlobStore) Container() string { return s.container }

// CreateIfNotExists creates the container; an existing one is success.
//
// Errors: errs.ErrTransient, *repo.Error.
func (s *BlobStore) CreateIfNotExists(ctx context.Context) error {
	return retry.Do(ctx, s.retry, retry.Op{Name: "create container", Resource: s.container}, func(ctx context.Context, _ int) error {
		_, err := s.client.CreateContainer(ctx, s.container, nil)
		err = errs.Wrap(err, "create container", s.container, "", "")
		if errors.Is(err, errs.ErrAlreadyExists) {
			return nil
		}
		return err
	})
}

// BlobName returns the name of value's blob: Prefix followed by value with every byte
// outside A-Z, a-z, 0-9, '-' and '_' percent-encoded ("O'Brien" is "O%27Brien"), so
// that any value gives a valid, flat name.
//
// Errors: errs.ErrInvalidInput for an empty value or a name over 1,024 characters.
func (s *BlobStore) BlobName(value string) (string, error) {
	if err := checkValue(value); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(s.prefix)
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	name := b.String()
	if n := utf8.RuneCountInString(name); n > maxBlobName {
		return "", errs.TooLarge("value", "the index blob's name (prefix and percent-encoded value) would exceed the blob name limit (characters)", n, maxBlobName)
	}
	return name, nil
}

// Check implements Store: it refuses a value whose blob name would be invalid.
func (s *BlobStore) Check(value string) error {
	_, err := s.BlobName(value)
	return err
}

// Keys implements Store: it reads value's blob (one request) and returns its keys, sorted.
// A value without a blob has no keys.
//
// Errors: errs.ErrInvalidInput (nothing sent), errs.ErrNotFound when the container does not exist,
// errs.ErrTransient, *repo.Error.
func (s *BlobStore) Keys(ctx context.Context, value string) ([]Key, error) {
	name, err := s.BlobName(value)
	if err != nil {
		return nil, err
	}
	entries, _, err := s.read(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]Key, 0, len(entries))
	for _, e := range entries {
		if k, ok := keyOf(e); ok {
			out = append(out, k)
		}
	}
	return out, nil
}

// Add implements Store: it lists k in value's blob unless it is there already, with a
// conditional write retried on conflicts. It is idempotent.
//
// Errors: errs.ErrInvalidInput (nothing sent), errs.ErrNotFound when the container does not exist,
// errs.ErrTransient (wrapping errs.ErrPreconditionFailed when contention outlasted the Conflict
// policy), *repo.Error.
func (s *BlobStore) Add(ctx context.Context, value string, k Key) error {
	_, err := s.apply(ctx, value, k, true)
	return err
}

// apply implements reporter: Add (add) or Remove, reporting whether a write was sent
// that changed, or may have changed, the list.
func (s *BlobStore) apply(ctx context.Context, value string, k Key, add bool) (bool, error) {
	if add {
		return s.change(ctx, "index blob add", value, k, true)
	}
	return s.change(ctx, "index blob remove", value, k, false)
}

// Remove implements Store: it removes k from value's blob (deleting the blob with its last
// key), with a conditional write retried on conflicts. It is idempotent.
//
// Errors: as Add.
func (s *BlobStore) Remove(ctx context.Context, value string, k Key) error {
	_, err := s.apply(ctx, value, k, false)
	return err
}

func (s *BlobStore) change(ctx context.Context, opName, value string, k Key, add bool) (bool, error) {
	name, err := s.BlobName(value)
	if err != nil {
		return false, err
	}
	if err := checkKey(k); err != nil {
		return false, err
	}
	entry := entryOf(k)
	wrote := false
	// The blob's name holds the value: the op names the container only.
	op := retry.Op{Name: opName, Resource: s.container, PartitionKey: k.PartitionKey, RowKey: k.RowKey, SensitiveKeys: true}
	err = retry.Optimistic(ctx, s.conflict, op, func(ctx context.Context, _ int) error {
		entries, etag, err := s.read(ctx, name)
		if err != nil {
			return err
		}
		i, found := slices.BinarySearch(entries, entry)
		switch {
		case add && found, !add && !found:
			return nil
		case add:
			entries = slices.Insert(entries, i, entry)
		default:
			entries = slices.Delete(entries, i, i+1)
		}
		if len(entries) == 0 {
			err = s.delete(ctx, name, etag)
		} else {
			err = s.write(ctx, name, etag, entries)
		}
		if err == nil || retry.MayHaveApplied(err) {
			wrote = true // this call changed the list, or may have
		}
		if isConflict(err) {
			return retry.Again(err)
		}
		return err
	})
	return wrote, err
}

// read returns the sorted entries of a blob and its ETag ("" and no entries when it does
// not exist).
func (s *BlobStore) read(ctx context.Context, name string) ([]string, azcore.ETag, error) {
	var entries []string
	var etag azcore.ETag
	err := retry.Do(ctx, s.retry, retry.Op{Name: "index blob read", Resource: s.container, SensitiveKeys: true}, func(ctx context.Context, _ int) error {
		entries, etag = nil, ""
		resp, err := s.client.DownloadStream(ctx, s.container, name, nil)
		if err != nil {
			err = errs.Wrap(err, "index blob read", s.container, "", "")
			var se *errs.ServiceError
			if errors.As(err, &se) && se.Code == "BlobNotFound" {
				return nil
			}
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return errs.Wrap(err, "index blob read", s.container, "", "")
		}
		if resp.ETag != nil {
			etag = *resp.ETag
		}
		for line := range strings.SplitSeq(string(body), "\n") {
			if line != "" {
				entries = append(entries, line)
			}
		}
		slices.Sort(entries)
		entries = slices.Compact(entries)
		return nil
	})
	return entries, etag, err
}

// write stores entries, conditional on etag (If-None-Match: * when the blob is new).
func (s *BlobStore) write(ctx context.Context, name string, etag azcore.ETag, entries []string) error {
	var body bytes.Buffer
	for _, e := range entries {
		body.WriteString(e)
		body.WriteByte('\n')
	}
	cond := &blob.ModifiedAccessConditions{}
	if etag == "" {
		any := azcore.ETagAny
		cond.IfNoneMatch = &any
	} else {
		cond.IfMatch = &etag
	}
	ct := blobContentType
	bb := s.client.ServiceClient().NewContainerClient(s.container).NewBlockBlobClient(name)
	return retry.Do(ctx, s.retry, retry.Op{Name: "index blob write", Resource: s.container, SensitiveKeys: true}, func(ctx context.Context, _ int) error {
		_, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(body.Bytes())), &blockblob.UploadOptions{
			HTTPHeaders:      &blob.HTTPHeaders{BlobContentType: &ct},
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: cond},
		})
		return errs.Wrap(err, "index blob write", s.container, "", "")
	})
}

// delete removes the blob, conditional on etag.
func (s *BlobStore) delete(ctx context.Context, name string, etag azcore.ETag) error {
	return retry.Do(ctx, s.retry, retry.Op{Name: "index blob delete", Resource: s.container, SensitiveKeys: true}, func(ctx context.Context, _ int) error {
		_, err := s.client.DeleteBlob(ctx, s.container, name, &azblob.DeleteBlobOptions{
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}},
		})
		return errs.Wrap(err, "index blob delete", s.container, "", "")
	})
}
