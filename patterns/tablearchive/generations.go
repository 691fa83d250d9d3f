package tablearchive

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// generation is one complete export (a generation with a manifest) found in a container.
type generation struct {
	m   Manifest
	key time.Time // the order of the table's generations (see Manifest.CheckedAt)
}

// Generations lists the complete exports (generations with a manifest) of table in
// container, oldest first: in the order of their Manifest.CheckedAt, the time the table
// was last proved to hold exactly that export. Blob names that are not ones this package
// writes are ignored; a manifest under a generation's name that is not one this
// package writes is ErrArchiveCorrupt. A generation ordered later than the archiver's
// clock + ClockSkew is ignored (logged): no clock this package trusts wrote it, and a
// forged one must neither become the latest nor push the CheckedAt of later exports out
// of range.
//
// Errors: ErrInvalidInput (nothing sent), ErrArchiveCorrupt, ErrTransient, *repo.Error
// (ErrNotFound when the container does not exist).
func (a *Archiver) Generations(ctx context.Context, container, table string) ([]string, error) {
	if err := codec.ValidateTableName(table); err != nil {
		return nil, err
	}
	if err := codec.ValidateContainerName(container); err != nil {
		return nil, err
	}
	gens, err := a.listGenerations(ctx, container, table)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(gens))
	for i, g := range gens {
		names[i] = g.m.Generation
	}
	return names, nil
}

// ReadManifest reads the manifest of the latest generation of table's export in
// container (see Generations for the order).
//
// Errors: ErrInvalidInput (nothing sent), ErrNotFound when there is no complete export,
// ErrArchiveCorrupt for a manifest this package did not write, ErrTransient, *repo.Error.
func (a *Archiver) ReadManifest(ctx context.Context, container, table string) (Manifest, error) {
	if err := codec.ValidateTableName(table); err != nil {
		return Manifest{}, err
	}
	if err := codec.ValidateContainerName(container); err != nil {
		return Manifest{}, err
	}
	gens, err := a.listGenerations(ctx, container, table)
	if err != nil {
		return Manifest{}, err
	}
	if len(gens) == 0 {
		return Manifest{}, fmt.Errorf("tablearchive: no export of %s in %s: %w", table, container, errs.ErrNotFound)
	}
	return gens[len(gens)-1].m, nil
}

// listGenerations finds every complete export of table in container (in the table's
// folder), reads and checks each manifest, and sorts them oldest first. It costs one
// listing of the folder and one read per manifest.
func (a *Archiver) listGenerations(ctx context.Context, container, table string) ([]generation, error) {
	names, err := a.manifestsIn(ctx, container, tableFolder(table))
	if err != nil {
		return nil, err
	}
	var gens []generation
	for _, g := range names {
		m, err := a.readManifest(ctx, container, table, g)
		if err != nil {
			return nil, err
		}
		key, err := orderKey(m)
		if err != nil {
			return nil, fmt.Errorf("%w: %s/%s: %v", ErrArchiveCorrupt, container, ManifestBlobName(table, g), err)
		}
		if limit := a.keyLimit(); key.After(limit) {
			a.opts.Logger.Warn("ignoring a generation ordered in the future (forged, or written by a clock far ahead)",
				zap.String("container", container), zap.String("table", table), zap.String("generation", g),
				zap.Time("orderedAt", key), zap.Time("limit", limit))
			continue
		}
		gens = append(gens, generation{m: m, key: key})
	}
	sort.SliceStable(gens, func(i, j int) bool {
		if !gens[i].key.Equal(gens[j].key) {
			return gens[i].key.Before(gens[j].key)
		}
		return gens[i].m.Generation < gens[j].m.Generation
	})
	return gens, nil
}

// orderKey is the time a generation is ordered by (see Manifest.CheckedAt).
func orderKey(m Manifest) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, m.CheckedAt)
	if err != nil || t.Year() < 2000 {
		return time.Time{}, fmt.Errorf("checkedAt %q is not a time this package writes", m.CheckedAt)
	}
	return t.UTC(), nil
}

// keyLimit is the latest order key a listing accepts: the archiver's clock + ClockSkew
// (+ one second, the granularity of the clocks compared). nextKey never goes beyond it.
func (a *Archiver) keyLimit() time.Time {
	return a.now().UTC().Add(a.opts.ClockSkew + time.Second)
}

// nextKey is the CheckedAt of a new generation whose last check began at checked: that
// time, or just after the latest key among gens when that is later (a clock that runs
// behind another worker's still orders after every generation it has seen).
func nextKey(checked time.Time, gens []generation) time.Time {
	k := checked.UTC()
	for _, g := range gens {
		if !g.key.Before(k) {
			k = g.key.Add(time.Microsecond)
		}
	}
	return k
}

// manifestsIn lists the generations with a manifest in one folder.
func (a *Archiver) manifestsIn(ctx context.Context, cont, folder string) ([]string, error) {
	prefix := folder + "/"
	var gens []string
	err := a.eachBlob(ctx, cont, prefix, func(b *container.BlobItem, _ time.Time) {
		rest := strings.TrimPrefix(*b.Name, prefix)
		if g, ok := strings.CutSuffix(rest, "/manifest.json"); ok && validGeneration(g) {
			gens = append(gens, g)
		}
	})
	if err != nil {
		return nil, err
	}
	return gens, nil
}

// eachBlob calls fn for every blob of container whose name starts with prefix, page by
// page, each page's request retried under a.opts.Retry, with the service's time of the
// page's response (its Date header; zero when absent). Items without a name are skipped.
func (a *Archiver) eachBlob(ctx context.Context, cont, prefix string, fn func(b *container.BlobItem, date time.Time)) error {
	pager := a.blobs().NewListBlobsFlatPager(cont, &azblob.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		var page azblob.ListBlobsFlatResponse
		err := retry.Do(ctx, a.opts.Retry, retry.Op{Name: "list blobs", Resource: cont}, func(ctx context.Context, _ int) error {
			var err error
			page, err = pager.NextPage(ctx)
			return errs.Wrap(err, "list blobs", cont, "", "")
		})
		if err != nil {
			return err
		}
		if page.Segment == nil {
			continue
		}
		var date time.Time
		if page.Date != nil {
			date = *page.Date
		}
		for _, b := range page.Segment.BlobItems {
			if b != nil && b.Name != nil {
				fn(b, date)
			}
		}
	}
	return nil
}

// readManifest reads and validates one generation's manifest: it is untrusted input
// (read by readJSON: over manifestLimit is ErrArchiveCorrupt), its Table must be table (in
// any case) and its DataBlob the name this package gives that generation's data.
func (a *Archiver) readManifest(ctx context.Context, container, table, gen string) (Manifest, error) {
	var m Manifest
	name := ManifestBlobName(table, gen)
	if err := a.readJSON(ctx, container, name, manifestLimit, &m); err != nil {
		return Manifest{}, err
	}
	// A sharded generation has no DataBlob: its shard manifests name the data, and
	// ShardsSHA256 binds them (see generationParts).
	dataOK := m.Shards == 0 && m.DataBlob == DataBlobName(table, gen) ||
		m.Shards > 0 && m.Shards <= MaxShards && m.DataBlob == "" && validHex(m.ShardsSHA256)
	if m.Format != ManifestFormat || !strings.EqualFold(m.Table, table) || m.Generation != gen || !validGeneration(gen) ||
		!dataOK || m.Entities < 0 || m.Bytes < 0 || len(m.SHA256) != 64 {
		return Manifest{}, fmt.Errorf("%w: %s/%s is not a %s manifest of generation %q of table %s", ErrArchiveCorrupt, container, name, ManifestFormat, gen, table)
	}
	return m, nil
}

// SweepAbortedExports deletes the data blobs of table's exports in container that have
// no manifest and were last modified more than olderThan ago, and returns their names.
// Age is measured by the storage service's clock (the listing's Date header against the
// blob's Last-Modified), never by this host's. An export writes its data blob first and
// its manifest last; one that fails in between deletes its data blob itself, but a
// process killed there leaves it. Such a blob is referenced by nothing (a restore reads
// only generations with a manifest). olderThan must exceed the longest export (a running
// export's data blob has no manifest yet either): at least an hour. With dryRun it only
// lists them.
//
// The sweep never deletes data a manifest refers to, even racing a running export: only
// a 404 on the manifest, read again just before the delete, counts as "no manifest" (any
// other failure stops the sweep with its error), and the delete is conditional on the
// ETag the listing saw (If-Match). An export sets its data blob's metadata (a new ETag and
// Last-Modified) just before it creates its manifest and again just before it deletes
// the table, and deletes the table only when that succeeded: a sweep that listed the
// blob before either meets 412 and keeps it, one whose delete landed first makes the
// export keep the table. A blob that changed since the listing is kept.
//
// The data of a sharded export (see the package doc, "Sharded exports") is removed when
// its generation has no manifest or no shard manifest names it, and only once no blob
// of its generation (plan, shard data, shard manifest) was written within olderThan:
// the finished shards of an export in progress wait for its last shards and combine.
// Each sharded generation past olderThan costs one read of its manifest and one of the
// manifest of each shard with data, however many data blobs it holds, on every sweep.
//
// Errors: ErrInvalidInput (nothing sent), ErrTransient, *repo.Error (ErrNotFound when
// the container does not exist).
func (a *Archiver) SweepAbortedExports(ctx context.Context, cont, table string, olderThan time.Duration, dryRun bool) ([]string, error) {
	if err := codec.ValidateTableName(table); err != nil {
		return nil, err
	}
	if err := codec.ValidateContainerName(cont); err != nil {
		return nil, err
	}
	if olderThan < time.Hour {
		return nil, errs.Invalid("olderThan", "must be at least an hour (a running export's data has no manifest yet), got %v", olderThan)
	}
	if err := a.allowed(table, "", cont); err != nil {
		return nil, err
	}
	type listed struct {
		age  time.Duration // by the service's clock
		etag azcore.ETag
	}
	var swept []string
	f := tableFolder(table)
	prefix := f + "/"
	data := map[string]listed{}
	manifests := map[string]bool{}
	shardData := map[string]map[string]listed{} // generation -> shard data blob -> listing
	// youngest is the age of the generation's last written blob (plan, shard data,
	// shard manifest): a sharded export in progress writes one at every step.
	youngest := map[string]time.Duration{}
	err := a.eachBlob(ctx, cont, prefix, func(b *container.BlobItem, date time.Time) {
		g, file, ok := strings.Cut(strings.TrimPrefix(*b.Name, prefix), "/")
		if !ok || !validGeneration(g) {
			return
		}
		if p := b.Properties; p != nil && p.LastModified != nil && !date.IsZero() {
			age := date.Add(a.seams.serviceAhead).Sub(*p.LastModified)
			if y, seen := youngest[g]; !seen || age < y {
				youngest[g] = age
			}
		} else {
			youngest[g] = 0 // age unknown: the generation is kept
		}
		switch file {
		case "manifest.json":
			manifests[g] = true
		case "entities.jsonl.gz":
			// Without the service's time, a Last-Modified or an ETag, the blob's age
			// is unknown: it is kept.
			p := b.Properties
			if p != nil && p.LastModified != nil && p.ETag != nil && *p.ETag != "" && !date.IsZero() {
				data[g] = listed{age: date.Add(a.seams.serviceAhead).Sub(*p.LastModified), etag: *p.ETag}
			}
		default:
			p := b.Properties
			if _, ok := shardIndex(file); ok && p != nil && p.LastModified != nil && p.ETag != nil && *p.ETag != "" && !date.IsZero() {
				if shardData[g] == nil {
					shardData[g] = map[string]listed{}
				}
				shardData[g][*b.Name] = listed{age: date.Add(a.seams.serviceAhead).Sub(*p.LastModified), etag: *p.ETag}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for g, l := range data {
		if manifests[g] || l.age < olderThan {
			continue
		}
		name := DataBlobName(table, g)
		if !dryRun {
			deleted, err := a.sweepOne(ctx, cont, table, g, l.etag)
			if err != nil {
				return swept, err
			}
			if !deleted {
				continue
			}
		}
		swept = append(swept, name)
	}
	// The data blobs of sharded exports: those of a generation without a manifest,
	// and those no shard manifest names (an attempt killed before its shard manifest,
	// then run again under another name).
	for g, blobs := range shardData {
		if youngest[g] < olderThan {
			// A sharded export still going on (a shard or the combine wrote within
			// olderThan): its finished shards' data waits for the last shard.
			continue
		}
		orphans, err := a.shardOrphans(ctx, cont, table, g, maps.Keys(blobs))
		if err != nil {
			return swept, err
		}
		for name, l := range blobs { // each at least as old as youngest[g] (>= olderThan)
			if !orphans[name] {
				continue
			}
			if !dryRun {
				// If-Match the listing's ETag: a shard job or a combine touches its
				// data before it writes a manifest that names it, so a sweep that
				// listed the blob earlier meets 412 and keeps it.
				deleted, err := a.deleteUnchanged(ctx, cont, name, l.etag)
				if err != nil {
					return swept, err
				}
				if !deleted {
					continue
				}
			}
			swept = append(swept, name)
		}
	}

	slices.Sort(swept)
	return swept, nil
}

// shardIndex parses the shard number of a shard data blob's file name
// (shard-NNNN-xxxxxxxx.jsonl.gz).
func shardIndex(file string) (int, bool) {
	rest, ok := strings.CutPrefix(file, "shard-")
	if !ok || len(rest) != len("0000-00000000.jsonl.gz") || !strings.HasSuffix(rest, ".jsonl.gz") || rest[4] != '-' || !isLowerHex(rest[5:13]) {
		return 0, false
	}
	n := 0
	for _, c := range rest[:4] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n < MaxShards
}

// shardOrphans returns the shard data blobs among names (of generation gen, listed
// before the call) that nothing references: every one when the generation has no
// manifest; else those no shard manifest names (an absent shard manifest names none).
// Only a 404 counts as absent: a manifest or shard manifest that does not read keeps
// every blob it could name. It reads the generation's manifest once and the manifest
// of each shard with data among names once, whatever the number of blobs (one per
// attempt), and tests the names against what they name.
func (a *Archiver) shardOrphans(ctx context.Context, cont, table, gen string, names iter.Seq[string]) (map[string]bool, error) {
	orphans := map[string]bool{}
	_, err := a.readManifest(ctx, cont, table, gen)
	switch {
	case errors.Is(err, errs.ErrNotFound):
		for name := range names {
			orphans[name] = true
		}
		return orphans, nil
	case errors.Is(err, ErrArchiveCorrupt):
		return orphans, nil
	case err != nil:
		return nil, err
	}
	folder := tableFolder(table) + "/" + gen + "/"
	perShard := map[int][]string{}
	for name := range names {
		if i, ok := shardIndex(strings.TrimPrefix(name, folder)); ok {
			perShard[i] = append(perShard[i], name)
		}
	}
	for i, blobs := range perShard {
		var s ShardManifest
		err := a.readJSON(ctx, cont, shardManifestName(table, gen, i), manifestLimit, &s)
		switch {
		case errors.Is(err, errs.ErrNotFound):
			s = ShardManifest{} // names no blob
		case errors.Is(err, ErrArchiveCorrupt):
			continue
		case err != nil:
			return nil, err
		}
		for _, name := range blobs {
			if name != s.DataBlob {
				orphans[name] = true
			}
		}
	}
	return orphans, nil
}

// sweepOne deletes one aborted export's data blob if its manifest is still absent (a
// 404: any other failure is returned, nothing deleted) and the blob still has the ETag
// the listing saw. It reports whether the blob is gone.
func (a *Archiver) sweepOne(ctx context.Context, cont, table, gen string, etag azcore.ETag) (bool, error) {
	_, err := a.readManifest(ctx, cont, table, gen)
	switch {
	case err == nil:
		return false, nil // the export finished since the listing: keep it
	case errors.Is(err, ErrArchiveCorrupt):
		// Something is there, if not a manifest this package reads: not an absence.
		a.opts.Logger.Warn("sweep: keeping a data blob whose manifest is unreadable", zap.String("container", cont),
			zap.String("blob", DataBlobName(table, gen)), errs.LogField(err))
		return false, nil
	case !errors.Is(err, errs.ErrNotFound):
		return false, err
	}
	return a.deleteUnchanged(ctx, cont, DataBlobName(table, gen), etag)
}

// deleteUnchanged deletes an aborted export's blob If-Match etag (the listing's) and
// reports whether it is gone: one changed since the listing (an export touched it on
// its way to its manifest) is kept.
func (a *Archiver) deleteUnchanged(ctx context.Context, cont, name string, etag azcore.ETag) (bool, error) {
	_, err := a.blobs().DeleteBlob(ctx, cont, name, &blob.DeleteOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}},
	})
	err = errs.Wrap(err, "delete aborted export", cont, "", "")
	switch {
	case err == nil, errors.Is(err, errs.ErrNotFound):
		return true, nil
	case errors.Is(err, errs.ErrPreconditionFailed):
		return false, nil
	}
	return false, err
}
