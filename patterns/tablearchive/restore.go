package tablearchive

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// restoreWindow is how many entities of a generation a restore writes with one BulkWrite
// (one retry.Schedule over the window's partitions). The data is in key order, partition
// after partition, and one partition serves a tenth of the account's rate: a window
// must span many partitions for the account's rate, and every partition in it to be
// written beside the others (a hot partition beside the cold ones), so it is large. It
// holds its entities in memory (about 20 MB at 1 KiB each).
const restoreWindow = 20000

// RestoreTable writes archived generations of a table back: the latest one by default,
// a chosen one, or all of them in their order (see Generations; a later copy of an
// entity replaces an earlier one). Before it writes anything it takes a snapshot of
// every chosen generation's data blob and verifies each snapshot whole against its
// manifest, and every line as an entity the service can hold, in strictly ascending key
// order (ErrArchiveCorrupt, a permanent failure: nothing written); it then writes
// from those snapshots, which cannot change, so what it writes is exactly what it
// verified, whatever happens to the data blobs meanwhile. It creates the target table
// (waiting out TableBeingDeleted), writes with idempotent upserts, and deletes its
// snapshots at the end (best effort: a stopped restore leaves them; they are read-only
// copies of immutable data, safe to delete). A rerun after a stop writes the same
// entities again. OutcomeMissing when there is no export. Snapshot deletion by someone
// with write access to the container during a restore stops it partway (a rerun takes
// new snapshots).
//
// A sharded generation's data is one blob per shard: its shard manifests are read and
// checked against the generation's manifest (ShardsSHA256, contiguous ranges, counts),
// every shard is snapshotted, and the snapshots are verified one after another, each
// against its shard manifest and all of them in order, through one SHA-256, against the
// generation's manifest (its SHA256: the shard manifests alone can be forged
// consistently), before the first write; they are then written in key order, shard
// after shard, in windows that span the shards (one retry.Schedule paces every partition
// of a window, whichever shard holds it).
//
// Both the table whose archive it reads (job.Table) and the target must be inside
// Options.AllowedTablePrefixes, and the container inside Options.AllowedContainers.
//
// Errors: ErrInvalidInput (nothing sent), ErrNotAllowed (nothing sent),
// ErrArchiveCorrupt, ErrTransient, *repo.Error.
func (a *Archiver) RestoreTable(ctx context.Context, job RestoreTableJob) (TableReport, error) {
	if err := job.Validate(); err != nil {
		return TableReport{}, err
	}
	target := job.Target
	if target == "" {
		target = job.Table
	}
	// The table whose archive is read is checked too: otherwise whoever can write the
	// queue copies any table exported to an allowed container into an allowed table.
	if err := a.allowed(job.Table, target, job.Container); err != nil {
		return TableReport{}, err
	}
	gens, err := a.listGenerations(ctx, job.Container, job.Table)
	if errors.Is(err, errs.ErrNotFound) {
		return TableReport{Outcome: OutcomeMissing}, nil
	}
	if err != nil {
		return TableReport{}, err
	}
	switch {
	case len(gens) == 0:
		return TableReport{Outcome: OutcomeMissing}, nil
	case job.Generation == GenerationLatest:
		gens = gens[len(gens)-1:]
	case job.Generation != GenerationAll:
		var chosen []generation
		for _, g := range gens {
			if g.m.Generation == job.Generation {
				chosen = append(chosen, g)
			}
		}
		if len(chosen) == 0 {
			return TableReport{Outcome: OutcomeMissing}, nil
		}
		gens = chosen
	}
	// The data of each generation: one blob, or one per shard (read and checked against
	// the shard manifests its manifest binds).
	parts := make([][]Manifest, len(gens))
	var all []Manifest
	for i, g := range gens {
		if parts[i], err = a.generationParts(ctx, job.Container, g.m); err != nil {
			return TableReport{}, err
		}
		all = append(all, parts[i]...)
	}
	snaps := make([]string, len(all))
	restoreID := newRestoreID()
	defer a.dropSnapshots(job.Container, all, snaps, restoreID)
	err = fanout.Do(ctx, len(all), shardParallel, func(ctx context.Context, i int) error {
		snap, err := a.snapshot(ctx, job.Container, all[i].DataBlob, restoreID)
		snaps[i] = snap
		return err
	})
	if err != nil {
		return TableReport{}, err
	}
	// Every snapshot verified before the first write: an unsharded generation against
	// its manifest; a sharded one shard by shard against its shard manifests and, read
	// in order through one hash, against its manifest's own SHA256 (verifyShards).
	first := make([]int, len(gens))
	for i := 1; i < len(gens); i++ {
		first[i] = first[i-1] + len(parts[i-1])
	}
	var total int64
	for _, g := range gens {
		total += g.m.Entities
	}
	t, err := a.table(target)
	if err != nil {
		return TableReport{}, err
	}
	vctx, verify := a.startPhase(ctx, KindRestoreTable, PhaseVerify, target, gens[len(gens)-1].m.Generation, total)
	err = fanout.Do(vctx, len(gens), shardParallel, func(ctx context.Context, i int) error {
		ps, ss := all[first[i]:first[i]+len(parts[i])], snaps[first[i]:first[i]+len(parts[i])]
		if gens[i].m.Shards == 0 {
			return a.readLines(ctx, job.Container, ps[0], ss[0], inKeyOrder(gens[i].m, t))
		}
		_, err := a.verifyShards(ctx, job.Container, gens[i].m, ps, ss, inKeyOrder(gens[i].m, t))
		return err
	})
	if err != nil {
		return TableReport{}, err
	}
	verify.finish()
	if err := a.after("restore-table", "verified"); err != nil {
		return TableReport{}, err
	}
	if err := t.CreateIfNotExists(ctx); err != nil {
		return TableReport{}, err
	}
	names := make([]string, len(gens))
	for i, g := range gens {
		names[i] = g.m.Generation
		// Generations in order: a later copy replaces an earlier one.
		ps, ss := all[first[i]:first[i]+len(parts[i])], snaps[first[i]:first[i]+len(parts[i])]
		if err := a.restoreGeneration(ctx, t, job.Container, g.m, ps, ss); err != nil {
			return TableReport{}, err
		}
	}
	return TableReport{Outcome: OutcomeRestored, Manifest: gens[len(gens)-1].m, Generations: names}, nil
}

// restoreGeneration writes one verified generation m into t from the snapshots of its
// data (one, or one per shard: parts, in key order), window by window (restoreWindow),
// a window filled across the shards' boundaries: each window's partitions, whatever
// shards hold them, are paced by one BulkWrite (one retry.Schedule).
func (a *Archiver) restoreGeneration(ctx context.Context, t *repo.Table[codec.Entity], container string, m Manifest, parts []Manifest, snapshots []string) error {
	window := restoreWindow
	if a.seams.restoreWindow > 0 {
		window = a.seams.restoreWindow
	}
	var batch []*codec.Entity
	var written int64
	pr := a.startProgress(KindRestoreTable, PhaseRestore, t.Name(), m.Generation, m.Entities)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := t.BulkWrite(ctx, batch, nil); err != nil {
			return err
		}
		written += int64(len(batch))
		batch = batch[:0]
		if err := a.after("restore-table", "chunk"); err != nil {
			return err
		}
		pr.report(written, false)
		return nil
	}
	var err error
	for j := 0; j < len(parts) && err == nil; j++ {
		err = a.readLines(ctx, container, parts[j], snapshots[j], func(e *codec.Entity) error {
			batch = append(batch, e)
			if len(batch) == window {
				return flush()
			}
			return nil
		})
	}
	if err == nil {
		err = flush()
	}
	if err == nil {
		pr.report(written, true)
	}
	return err
}

// snapshotTag is the metadata name that marks a snapshot with the restore that took it.
const snapshotTag = "tablepatternsrestore"

// newRestoreID names one run of RestoreTable (random, 128 bits).
func newRestoreID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// snapshot takes a snapshot of a data blob, tagged with restoreID in its metadata, and
// returns its id. A retry after a lost response takes a second one: dropSnapshots finds
// both by their tag.
func (a *Archiver) snapshot(ctx context.Context, container, name, restoreID string) (string, error) {
	bc := a.blobs().ServiceClient().NewContainerClient(container).NewBlobClient(name)
	var id string
	opts := &blob.CreateSnapshotOptions{Metadata: map[string]*string{snapshotTag: &restoreID}}
	err := retry.Do(ctx, a.opts.Retry, retry.Op{Name: "snapshot blob", Resource: container}, func(ctx context.Context, _ int) error {
		resp, err := bc.CreateSnapshot(ctx, opts)
		if err != nil {
			return errs.Wrap(err, "snapshot blob", container, "", "")
		}
		if resp.Snapshot == nil || *resp.Snapshot == "" {
			return fmt.Errorf("tablearchive: snapshot of %s/%s: no snapshot id in the response", container, name)
		}
		id = *resp.Snapshot
		return nil
	})
	if errors.Is(err, errs.ErrNotFound) {
		// A manifest without its data: the archive is broken, not a passing failure.
		return "", fmt.Errorf("%w: %s/%s is missing: %w", ErrArchiveCorrupt, container, name, err)
	}
	return id, err
}

// dropSnapshots deletes the snapshots a restore took (best effort, with its own short
// deadline: the restore's context may be over): every snapshot of the chosen data blobs
// tagged with restoreID (also those whose response was lost, so that the restore never
// learned their ids), and the ids it knows.
func (a *Archiver) dropSnapshots(cont string, parts []Manifest, snaps []string, restoreID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc := a.blobs().ServiceClient().NewContainerClient(cont)
	for i, p := range parts {
		ids := map[string]bool{}
		if snaps[i] != "" {
			ids[snaps[i]] = true
		}
		name := p.DataBlob
		pager := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &name, Include: container.ListBlobsInclude{Snapshots: true, Metadata: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				a.opts.Logger.Warn("restore: snapshots not listed (the ones whose response was lost stay; read-only copies, safe to delete)",
					zap.String("container", cont), zap.String("blob", name), errs.LogField(errs.Wrap(err, "list snapshots", cont, "", "")))
				break
			}
			if page.Segment == nil {
				continue
			}
			for _, it := range page.Segment.BlobItems {
				if it == nil || it.Name == nil || *it.Name != name || it.Snapshot == nil || *it.Snapshot == "" {
					continue
				}
				for k, v := range it.Metadata {
					if strings.EqualFold(k, snapshotTag) && v != nil && *v == restoreID {
						ids[*it.Snapshot] = true
					}
				}
			}
		}
		for s := range ids {
			bc, err := cc.NewBlobClient(name).WithSnapshot(s)
			if err == nil {
				_, err = bc.Delete(ctx, nil)
				if err = errs.Wrap(err, "delete snapshot", cont, "", ""); errors.Is(err, errs.ErrNotFound) {
					err = nil
				}
			}
			if err != nil {
				a.opts.Logger.Warn("restore: snapshot not deleted (a read-only copy, safe to delete)", zap.String("container", cont),
					zap.String("blob", name), zap.String("snapshot", s), errs.LogField(err))
			}
		}
	}
}

// readLines streams the data blob of m (its snapshot when snapshot is set), checks it
// against m, and calls fn for each entity (fn may be nil to only verify). A blob that
// does not match m, or is missing, is ErrArchiveCorrupt.
func (a *Archiver) readLines(ctx context.Context, container string, m Manifest, snapshot string, fn func(*codec.Entity) error) error {
	_, err := a.readData(ctx, container, m, snapshot, fn)
	return err
}

// readData is readLines that also returns the ETag of the blob it read (one download:
// the content checked is the content of that ETag).
func (a *Archiver) readData(ctx context.Context, container string, m Manifest, snapshot string, fn func(*codec.Entity) error) (azcore.ETag, error) {
	return a.readDataTo(ctx, container, m, snapshot, fn, nil)
}

// readDataTo is readData that also writes the blob's uncompressed lines to whole (when
// not nil): the shards of a generation, read in order through one hash, must hash to
// the generation's manifest (see verifyShards).
func (a *Archiver) readDataTo(ctx context.Context, container string, m Manifest, snapshot string, fn func(*codec.Entity) error, whole io.Writer) (azcore.ETag, error) {
	bc := a.blobs().ServiceClient().NewContainerClient(container).NewBlobClient(m.DataBlob)
	if snapshot != "" {
		var err error
		if bc, err = bc.WithSnapshot(snapshot); err != nil {
			return "", err
		}
	}
	resp, err := bc.DownloadStream(ctx, nil)
	if err = errs.Wrap(err, "download table export", container, "", ""); errors.Is(err, errs.ErrNotFound) {
		// A manifest without its data: the archive is broken, not a passing failure.
		return "", fmt.Errorf("%w: %s/%s is missing: %w", ErrArchiveCorrupt, container, m.DataBlob, err)
	} else if err != nil {
		return "", err
	}
	var etag azcore.ETag
	if resp.ETag != nil {
		etag = *resp.ETag
	}
	defer resp.Body.Close()
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		return "", fmt.Errorf("%w: export %s/%s is not gzip: %v", ErrArchiveCorrupt, container, m.DataBlob, err)
	}
	var sum hash.Hash = sha256.New()
	var to io.Writer = sum
	if whole != nil {
		to = io.MultiWriter(sum, whole)
	}
	sc := bufio.NewScanner(io.TeeReader(zr, to))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20) // an entity is at most 1 MiB, its JSON a few
	var n, size int64
	pr := progressIn(ctx)
	for sc.Scan() {
		n++
		pr.add(1)
		size += int64(len(sc.Bytes())) + 1
		if n > m.Entities || size > m.Bytes {
			break // longer than its manifest: corrupt, and fn must not see more
		}
		if fn == nil {
			continue
		}
		e, err := codec.DecodeEntity(sc.Bytes())
		if err != nil {
			return "", fmt.Errorf("%w: export %s/%s line %d: %v", ErrArchiveCorrupt, container, m.DataBlob, n, err)
		}
		if err := fn(e); err != nil {
			return "", err
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%w: reading export %s/%s: %v", ErrArchiveCorrupt, container, m.DataBlob, err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); n != m.Entities || size != m.Bytes || got != m.SHA256 {
		return "", fmt.Errorf("%w: export %s/%s: %d entities, %d bytes, sha256 %s; the manifest says %d, %d, %s",
			ErrArchiveCorrupt, container, m.DataBlob, n, size, got, m.Entities, m.Bytes, m.SHA256)
	}
	return etag, nil
}

// verifyData reads m's data blob whole and checks it against m.
func (a *Archiver) verifyData(ctx context.Context, container string, m Manifest) error {
	return a.readLines(ctx, container, m, "", nil)
}

// verifyDataETag is verifyData that returns the ETag of the content it checked.
func (a *Archiver) verifyDataETag(ctx context.Context, container string, m Manifest) (azcore.ETag, error) {
	return a.readData(ctx, container, m, "", nil)
}

// dropAbortedData deletes the data blob of an export that failed before its manifest
// (best effort: SweepAbortedExports finds the ones a crash leaves).
func (a *Archiver) dropAbortedData(container, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := a.blobs().DeleteBlob(ctx, container, name, nil)
	if err = errs.Wrap(err, "delete aborted export", container, "", ""); err != nil && !errors.Is(err, errs.ErrNotFound) {
		a.opts.Logger.Warn("aborted export: data blob not deleted (SweepAbortedExports removes it)", zap.String("container", container),
			zap.String("blob", name), errs.LogField(err))
	}
}
