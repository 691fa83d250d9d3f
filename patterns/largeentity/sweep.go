package largeentity

import (
	"context"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// SweepReport counts what a sweep saw and did.
type SweepReport struct {
	// Scanned counts the blobs listed under the Store's prefix.
	Scanned int
	// Young counts blobs younger than SweepGrace: never judged, since a write may be about
	// to reference them.
	Young int
	// Referenced counts old enough blobs that their entity references: kept.
	Referenced int
	// Deleted counts orphans deleted: their entity is gone or references other blobs.
	Deleted int
	// Foreign counts blobs without this Store's metadata, or whose metadata names an
	// entity other than the one whose directory holds them: never deleted.
	Foreign int
	// Changed counts orphans that were changed or deleted by someone else before the
	// sweeper's conditional delete: left alone.
	Changed int
	// NextYoung is the time (by the service's clock) at which the youngest unjudged blob
	// becomes old enough to judge; zero if none was young.
	NextYoung time.Time
	// At is the service's time of the last listing.
	At time.Time
}

func (r *SweepReport) add(o SweepReport) {
	r.Scanned += o.Scanned
	r.Young += o.Young
	r.Referenced += o.Referenced
	r.Deleted += o.Deleted
	r.Foreign += o.Foreign
	r.Changed += o.Changed
	if !o.NextYoung.IsZero() && (r.NextYoung.IsZero() || o.NextYoung.After(r.NextYoung)) {
		r.NextYoung = o.NextYoung
	}
	if o.At.After(r.At) {
		r.At = o.At
	}
}

// Sweep finds and deletes the orphan blobs of this Store: blobs under its prefix, older
// than Options.SweepGrace by the service's clock, whose entity does not exist or does not
// reference them. Orphans come from writes that stopped between their steps (a crash, a
// lost connection) and from deletes of replaced blobs that failed. A blob is deleted
// conditionally on the ETag it was listed with. Run it periodically (for example daily);
// it is safe to run concurrently with writes, with reads and with itself.
//
// Cost: one list request per 5,000 blobs, one point read per entity that has old blobs,
// one delete per orphan.
//
// Errors: errs.ErrTransient, *errs.ServiceError, context errors; the report counts what was done
// before the error.
func (s *Store[T]) Sweep(ctx context.Context) (SweepReport, error) {
	return s.sweep(ctx, s.opts.Prefix+"/")
}

// SweepEntity is Sweep restricted to the blobs of one entity (one list request under the
// entity's own prefix): the targeted clean-up after a write that failed ambiguously. It is
// idempotent and may run at any time, concurrently with writes of the entity.
//
// Errors: errs.ErrInvalidInput (keys; nothing sent), as Sweep otherwise.
func (s *Store[T]) SweepEntity(ctx context.Context, pk, rk string) (SweepReport, error) {
	if err := validateKeys(pk, rk); err != nil {
		return SweepReport{}, err
	}
	return s.sweep(ctx, s.keyDir(pk, rk))
}

func (s *Store[T]) sweep(ctx context.Context, prefix string) (SweepReport, error) {
	var total SweepReport
	var marker *string
	for {
		page, err := s.listPage(ctx, prefix, marker)
		if err != nil {
			return total, err
		}
		rep, err := s.sweepPage(ctx, page)
		total.add(rep)
		if err != nil {
			return total, err
		}
		marker = page.NextMarker
		if marker == nil || *marker == "" {
			return total, nil
		}
	}
}

// listPage lists one page of blobs with their metadata. A new pager per page, resumed by
// marker, lets a failed page be retried on its own.
func (s *Store[T]) listPage(ctx context.Context, prefix string, marker *string) (container.ListBlobsFlatResponse, error) {
	op := retry.Op{Name: "list blobs", Resource: s.cname + "/" + prefix}
	return retry.DoValue(ctx, s.opts.Retry, op, func(ctx context.Context, _ int) (container.ListBlobsFlatResponse, error) {
		p := s.container.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{
			Prefix: &prefix, Marker: marker, Include: container.ListBlobsInclude{Metadata: true},
		})
		resp, err := p.NextPage(ctx)
		return resp, errs.Wrap(err, op.Name, op.Resource, "", "")
	})
}

// candidate is an old enough blob of the Store, grouped by the entity it names.
type candidate struct {
	name string
	etag azcore.ETag
}

type entityKey struct{ pk, rk string }

// listedAt is the service's time of a listing page (its Date header), so that the
// sweeper's own clock does not matter.
func (s *Store[T]) listedAt(page container.ListBlobsFlatResponse) time.Time {
	now := time.Now()
	if page.Date != nil {
		now = *page.Date
	}
	return s.seams.now(now)
}

// listed returns the usable items of a listing page (with a name and properties).
func listed(page container.ListBlobsFlatResponse) []*container.BlobItem {
	if page.Segment == nil {
		return nil
	}
	var out []*container.BlobItem
	for _, it := range page.Segment.BlobItems {
		if it != nil && it.Name != nil && it.Properties != nil {
			out = append(out, it)
		}
	}
	return out
}

// young counts a blob too young to judge, created at created (nil if unknown), and when
// it becomes old enough.
func (r *SweepReport) young(created *time.Time, grace time.Duration) {
	r.Young++
	if created != nil {
		if at := created.Add(grace); at.After(r.NextYoung) {
			r.NextYoung = at
		}
	}
}

// owner returns the entity whose blob it is: the one its metadata names, provided the blob
// sits in that entity's directory. A blob without the Store's metadata, or whose metadata
// was edited to name another entity, has no owner and is never judged.
func (s *Store[T]) owner(it *container.BlobItem) (entityKey, bool) {
	k, ok := metadataKeys(it.Metadata)
	if !ok || !strings.HasPrefix(*it.Name, s.keyDir(k.pk, k.rk)) {
		return entityKey{}, false
	}
	return k, true
}

// etagOf returns the listed ETag of a blob, the condition of its delete.
func etagOf(it *container.BlobItem) azcore.ETag {
	if it.Properties.ETag == nil {
		return ""
	}
	return *it.Properties.ETag
}
