package consistency

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// ManifestFormat names the layout of a table export, recorded in its manifest.
const ManifestFormat = "tablepatterns/table-export/v1"

// ArchiveTableJob is the payload of an archive-table message: export Table to Container,
// verify, and delete the table unless KeepTable.
type ArchiveTableJob struct {
	Table     string `json:"table"`
	Container string `json:"container"`
	KeepTable bool   `json:"keepTable,omitempty"`
}

// RestoreTableJob is the payload of a restore-table message: write the export of Table
// in Container back into Target (defaults to Table).
type RestoreTableJob struct {
	Table     string `json:"table"`
	Container string `json:"container"`
	Target    string `json:"target,omitempty"`
}

// Manifest describes a table export. It is written after the data blob is verified: its
// presence means the export is complete.
type Manifest struct {
	Format     string `json:"format"`
	Table      string `json:"table"`
	Entities   int64  `json:"entities"`
	Partitions int64  `json:"partitions"`
	// Bytes and SHA256 are the size and checksum of the uncompressed JSON lines.
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// DataBlob is the name of the gzip JSON-lines blob in the same container.
	DataBlob   string `json:"dataBlob"`
	ExportedAt string `json:"exportedAt"`
}

// TableReport is the result of a table job.
type TableReport struct {
	Outcome  Outcome
	Manifest Manifest
}

// DataBlobName is the blob that holds a table's export: gzip JSON lines, one entity each.
func DataBlobName(table string) string { return table + "/entities.jsonl.gz" }

// ManifestBlobName is the blob that holds a table export's Manifest.
func ManifestBlobName(table string) string { return table + "/manifest.json" }

func (j ArchiveTableJob) validate() error {
	if err := codec.ValidateTableName(j.Table); err != nil {
		return err
	}
	return codec.ValidateContainerName(j.Container)
}

func (j RestoreTableJob) validate() error {
	if err := codec.ValidateTableName(j.Table); err != nil {
		return err
	}
	if j.Target != "" {
		if err := codec.ValidateTableName(j.Target); err != nil {
			return err
		}
	}
	return codec.ValidateContainerName(j.Container)
}

// ArchiveTable exports a whole table (an old per-day or per-month table: seeds/001
// hot/cold data) to a gzip JSON-lines blob, reads the blob back and checks it against what
// was read, recounts the table to make sure nothing was written meanwhile, writes the
// manifest, and deletes the table (unless KeepTable). A rerun re-exports while the table
// exists and reports OutcomeAlreadyArchived once the manifest is written and the table is
// gone.
//
// Errors: ErrInvalidInput (nothing sent), ErrTransient, *repo.Error, and a verification
// error if the blob does not read back as written or the table changed during the export.
func (a *Archiver) ArchiveTable(ctx context.Context, job ArchiveTableJob) (TableReport, error) {
	if err := job.validate(); err != nil {
		return TableReport{}, err
	}
	t, err := a.table(job.Table)
	if err != nil {
		return TableReport{}, err
	}
	exists, err := t.Exists(ctx)
	if err != nil {
		return TableReport{}, err
	}
	if !exists {
		m, err := a.readManifest(ctx, job.Container, job.Table)
		if errors.Is(err, errs.ErrNotFound) {
			return TableReport{Outcome: OutcomeMissing}, nil
		}
		if err != nil {
			return TableReport{}, err
		}
		return TableReport{Outcome: OutcomeAlreadyArchived, Manifest: m}, nil
	}
	if err := a.createContainer(ctx, job.Container); err != nil {
		return TableReport{}, err
	}
	m, err := a.export(ctx, t, job)
	if err != nil {
		return TableReport{}, err
	}
	if err := a.after("archive-table", "exported"); err != nil {
		return TableReport{}, err
	}
	if err := a.verifyData(ctx, job.Container, m); err != nil {
		return TableReport{}, err
	}
	if n, err := countEntities(ctx, t); err != nil {
		return TableReport{}, err
	} else if n != m.Entities {
		return TableReport{}, fmt.Errorf("consistency: table %s changed during its export (%d entities exported, %d now): not deleted; the job will be retried", job.Table, m.Entities, n)
	}
	if err := a.writeManifest(ctx, job.Container, m); err != nil {
		return TableReport{}, err
	}
	if err := a.after("archive-table", "manifest"); err != nil {
		return TableReport{}, err
	}
	if !job.KeepTable {
		if err := t.DeleteTable(ctx); err != nil && !errors.Is(err, errs.ErrNotFound) {
			return TableReport{}, err
		}
	}
	a.opts.Logger.Info("table archived", zap.String("table", job.Table), zap.String("container", job.Container),
		zap.Int64("entities", m.Entities), zap.Int64("bytes", m.Bytes), zap.Bool("tableDeleted", !job.KeepTable))
	return TableReport{Outcome: OutcomeMoved, Manifest: m}, nil
}

// export streams every entity of t into the data blob and returns the manifest.
func (a *Archiver) export(ctx context.Context, t *repo.Table[codec.Entity], job ArchiveTableJob) (Manifest, error) {
	m := Manifest{Format: ManifestFormat, Table: job.Table, DataBlob: DataBlobName(job.Table)}
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := a.writeLines(ctx, t, pw, &m)
		pw.CloseWithError(err)
		written <- err
	}()
	_, err := a.blobs().UploadStream(ctx, job.Container, m.DataBlob, pr, nil)
	if err != nil {
		pr.CloseWithError(err) // unblocks the writer if the upload stopped early
	}
	if werr := <-written; werr != nil {
		return Manifest{}, werr
	}
	if err != nil {
		return Manifest{}, errs.Wrap(err, "upload table export", job.Container, "", "")
	}
	m.ExportedAt = now().UTC().Format("2006-01-02T15:04:05.0000000Z")
	return m, nil
}

// writeLines writes t's entities as gzip JSON lines to w, filling m's counts and checksum.
// The upload reads from the other end of the pipe, so m is complete when the upload ends.
func (a *Archiver) writeLines(ctx context.Context, t *repo.Table[codec.Entity], w io.Writer, m *Manifest) error {
	zw := gzip.NewWriter(w)
	sum := sha256.New()
	out := io.MultiWriter(zw, sum)
	lastPK := ""
	for e, err := range t.Query(ctx, repo.Query{FullMetadata: true}) {
		if err != nil {
			return err
		}
		e.ETag = ""
		line, err := codec.EncodeEntity(&e)
		if err != nil {
			return err
		}
		line = append(line, '\n')
		if _, err := out.Write(line); err != nil {
			return err
		}
		m.Entities++
		m.Bytes += int64(len(line))
		if m.Entities == 1 || e.PartitionKey != lastPK {
			m.Partitions++
			lastPK = e.PartitionKey
		}
		if m.Entities%int64(a.opts.ProgressEvery) == 0 {
			a.opts.Logger.Info("exporting table", zap.String("table", m.Table), zap.Int64("entities", m.Entities))
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	m.SHA256 = hex.EncodeToString(sum.Sum(nil))
	return nil
}

// readLines streams the data blob of m, checks it against m, and calls fn for each entity
// (fn may be nil to only verify).
func (a *Archiver) readLines(ctx context.Context, container string, m Manifest, fn func(*codec.Entity) error) error {
	resp, err := a.blobs().DownloadStream(ctx, container, m.DataBlob, nil)
	if err != nil {
		return errs.Wrap(err, "download table export", container, "", "")
	}
	defer resp.Body.Close()
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		return fmt.Errorf("consistency: export %s/%s is not gzip: %w", container, m.DataBlob, err)
	}
	var sum hash.Hash = sha256.New()
	sc := bufio.NewScanner(io.TeeReader(zr, sum))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20) // an entity is at most 1 MiB, its JSON a few
	var n, size int64
	for sc.Scan() {
		n++
		size += int64(len(sc.Bytes())) + 1
		if fn == nil {
			continue
		}
		e, err := codec.DecodeEntity(sc.Bytes())
		if err != nil {
			return fmt.Errorf("consistency: export %s/%s line %d: %w", container, m.DataBlob, n, err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("consistency: reading export %s/%s: %w", container, m.DataBlob, err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); n != m.Entities || size != m.Bytes || got != m.SHA256 {
		return fmt.Errorf("consistency: export %s/%s does not match its manifest: %d entities, %d bytes, sha256 %s; want %d, %d, %s",
			container, m.DataBlob, n, size, got, m.Entities, m.Bytes, m.SHA256)
	}
	return nil
}

func (a *Archiver) verifyData(ctx context.Context, container string, m Manifest) error {
	return a.readLines(ctx, container, m, nil)
}

func countEntities(ctx context.Context, t *repo.Table[codec.Entity]) (int64, error) {
	var n int64
	for _, err := range t.Query(ctx, repo.Query{Select: []string{"PartitionKey"}}) {
		if err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

func (a *Archiver) writeManifest(ctx context.Context, container string, m Manifest) error {
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	name := ManifestBlobName(m.Table)
	return retry.Do(ctx, a.opts.Retry, retry.Op{Name: "upload manifest", Resource: container + "/" + name}, func(ctx context.Context, _ int) error {
		_, err := a.blobs().UploadBuffer(ctx, container, name, body, nil)
		return errs.Wrap(err, "upload manifest", container, "", "")
	})
}

// ReadManifest reads the manifest of table's export in container.
//
// Errors: ErrNotFound when there is no (complete) export, ErrTransient, *repo.Error.
func (a *Archiver) ReadManifest(ctx context.Context, container, table string) (Manifest, error) {
	return a.readManifest(ctx, container, table)
}

func (a *Archiver) readManifest(ctx context.Context, container, table string) (Manifest, error) {
	var m Manifest
	name := ManifestBlobName(table)
	err := retry.Do(ctx, a.opts.Retry, retry.Op{Name: "download manifest", Resource: container + "/" + name}, func(ctx context.Context, _ int) error {
		resp, err := a.blobs().DownloadStream(ctx, container, name, nil)
		if err != nil {
			return errs.Wrap(err, "download manifest", container, "", "")
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return errs.Wrap(err, "download manifest", container, "", "")
		}
		return json.Unmarshal(body, &m)
	})
	if err == nil && (m.Format != ManifestFormat || m.Table != table) {
		err = fmt.Errorf("consistency: %s/%s is not a %s manifest of table %s", container, name, ManifestFormat, table)
	}
	return m, err
}

// restoreChunk is how many entities RestoreTable writes per BulkWrite.
const restoreChunk = 2000

// RestoreTable writes an archived table back: it reads the manifest (OutcomeMissing if
// there is none), creates the target table (waiting out TableBeingDeleted), and writes
// every entity with idempotent upserts while it checks the data blob against the
// manifest. A rerun after a stop writes the same entities again. A checksum mismatch is
// reported after the writes that preceded it; the entities written are the archive's own.
//
// Errors: ErrInvalidInput (nothing sent), ErrTransient, *repo.Error, a verification error.
func (a *Archiver) RestoreTable(ctx context.Context, job RestoreTableJob) (TableReport, error) {
	if err := job.validate(); err != nil {
		return TableReport{}, err
	}
	target := job.Target
	if target == "" {
		target = job.Table
	}
	m, err := a.readManifest(ctx, job.Container, job.Table)
	if errors.Is(err, errs.ErrNotFound) {
		return TableReport{Outcome: OutcomeMissing}, nil
	}
	if err != nil {
		return TableReport{}, err
	}
	t, err := a.table(target)
	if err != nil {
		return TableReport{}, err
	}
	if err := t.CreateIfNotExists(ctx); err != nil {
		return TableReport{}, err
	}
	var batch []*codec.Entity
	var written int64
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
		a.opts.Logger.Info("restoring table", zap.String("table", target), zap.Int64("entities", written), zap.Int64("of", m.Entities))
		return nil
	}
	err = a.readLines(ctx, job.Container, m, func(e *codec.Entity) error {
		batch = append(batch, e)
		if len(batch) == restoreChunk {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return TableReport{}, err
	}
	return TableReport{Outcome: OutcomeRestored, Manifest: m}, nil
}
