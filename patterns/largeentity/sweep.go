package largeentity

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/repo"
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

// sweepPage judges the blobs of one listing page.
//
// The race it must not lose: a write uploads blob B, then points its entity at B. If the
// sweeper read the entity between those two steps, it would see B unreferenced. So B is
// judged only when it is older than SweepGrace, measured from B's creation by the
// service's clock (the page's Date), and every entity read for the page happens after the
// page was listed: by then any write that created B has either written its entity or given
// up (a write sends its entity write within MaxWriteTime of its first upload, and
// SweepGrace is at least twice that).
func (s *Store[T]) sweepPage(ctx context.Context, page container.ListBlobsFlatResponse) (SweepReport, error) {
	var rep SweepReport
	now := time.Now()
	if page.Date != nil {
		now = *page.Date
	}
	if s.now != nil {
		now = s.now(now)
	}
	rep.At = now
	groups := map[entityKey][]candidate{}
	var order []entityKey
	if page.Segment != nil {
		for _, it := range page.Segment.BlobItems {
			if it == nil || it.Name == nil || it.Properties == nil {
				continue
			}
			rep.Scanned++
			created := it.Properties.CreationTime
			if created == nil {
				created = it.Properties.LastModified
			}
			if created == nil || now.Sub(*created) < s.opts.SweepGrace {
				rep.Young++
				if created != nil {
					if at := created.Add(s.opts.SweepGrace); at.After(rep.NextYoung) {
						rep.NextYoung = at
					}
				}
				continue
			}
			k, ok := metadataKeys(it.Metadata)
			if !ok || !strings.HasPrefix(*it.Name, s.keyDir(k.pk, k.rk)) {
				// Without our metadata, or with metadata naming an entity whose directory
				// the blob is not in (the metadata was edited): not judged by that entity.
				rep.Foreign++
				continue
			}
			if _, seen := groups[k]; !seen {
				order = append(order, k)
			}
			var etag azcore.ETag
			if it.Properties.ETag != nil {
				etag = *it.Properties.ETag
			}
			groups[k] = append(groups[k], candidate{name: *it.Name, etag: etag})
		}
	}
	var mu sync.Mutex
	err := fanout.Do(ctx, len(order), s.opts.Concurrency, func(ctx context.Context, i int) error {
		k := order[i]
		r, err := s.judge(ctx, k, groups[k])
		mu.Lock()
		rep.add(r)
		mu.Unlock()
		return err
	})
	return rep, err
}

// judge reads one entity and deletes its old blobs that it does not reference.
func (s *Store[T]) judge(ctx context.Context, k entityKey, cands []candidate) (SweepReport, error) {
	var rep SweepReport
	referenced := map[string]bool{}
	cur, err := s.table.Get(ctx, k.pk, k.rk)
	switch {
	case err == nil:
		for _, p := range s.partsOf(&cur, false) {
			if p != nil && p.present && p.name != "" {
				referenced[p.name] = true
			}
		}
	case errors.Is(err, repo.ErrNotFound):
	case errors.Is(err, repo.ErrInvalidInput):
		// Metadata naming keys the table cannot hold: not one of ours after all.
		rep.Foreign += len(cands)
		return rep, nil
	default:
		return rep, err
	}
	for _, c := range cands {
		if referenced[c.name] {
			rep.Referenced++
			continue
		}
		etag := c.etag
		err := s.deleteBlob(ctx, c.name, &etag)
		switch {
		case err == nil:
			rep.Deleted++
			s.log.Info("largeentity: orphan blob deleted", zap.String("container", s.cname), zap.String("blob", c.name))
		case errors.Is(err, repo.ErrPreconditionFailed):
			rep.Changed++
		default:
			return rep, err
		}
	}
	return rep, nil
}

// metadataKeys reads the entity keys a Store writes into each blob's metadata. Metadata
// names are compared case-insensitively (the service keeps their case, Azurite lowercases
// them).
func metadataKeys(meta map[string]*string) (entityKey, bool) {
	var pkv, rkv *string
	for name, v := range meta {
		switch {
		case strings.EqualFold(name, metaPartitionKey):
			pkv = v
		case strings.EqualFold(name, metaRowKey):
			rkv = v
		}
	}
	if pkv == nil || rkv == nil {
		return entityKey{}, false
	}
	pk, err1 := base64.RawURLEncoding.DecodeString(*pkv)
	rk, err2 := base64.RawURLEncoding.DecodeString(*rkv)
	if err1 != nil || err2 != nil {
		return entityKey{}, false
	}
	return entityKey{string(pk), string(rk)}, true
}
