package testbed

import (
	"io"
	"net/http"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// RangeJob is the archive-range job that moves the RowKeys [from, to) of partition pk of
// the bed's table to the table target ("" leaves an end open).
func (b *Bed) RangeJob(target, pk, from, to string) consistency.ArchiveRangeJob {
	return consistency.ArchiveRangeJob{Source: b.Table, PartitionKey: pk, RowKeyFrom: from, RowKeyTo: to, TargetTable: target}
}

// MustArchiveRange runs job with a to its end, and fails the test unless it succeeds
// having moved want entities, the job's range of the bed's table is empty and the target
// holds want entities in the job's partition (all read directly). It returns the report.
func (b *Bed) MustArchiveRange(a *consistency.Archiver, job consistency.ArchiveRangeJob, want int) consistency.RangeReport {
	b.T.Helper()
	rep, err := a.ArchiveRange(b.Ctx, job)
	if err != nil || rep.Moved != want {
		b.T.Fatalf("archive range %s [%q, %q): moved %d (want %d): %v", job.PartitionKey, job.RowKeyFrom, job.RowKeyTo, rep.Moved, want, err)
	}
	b.MustHaveArchivedRange(job, want)
	return rep
}

// MustHaveArchivedRange fails the test unless the range of job (a one-partition job) is
// empty in the bed's table and the target holds want entities in the job's partition
// (all read directly).
func (b *Bed) MustHaveArchivedRange(job consistency.ArchiveRangeJob, want int) {
	b.T.Helper()
	left, err := b.Raw.Collect(b.Ctx, repo.Query{Filter: filter.RowKeyRange(job.PartitionKey, job.RowKeyFrom, job.RowKeyTo)})
	if err != nil || len(left) != 0 {
		b.T.Fatalf("the range holds %d entities after the archive: %v", len(left), err)
	}
	arch, err := repo.New[codec.Entity](b.Direct.Tables, job.TargetTable, nil)
	if err != nil {
		b.T.Fatal(err)
	}
	got, err := arch.Collect(b.Ctx, repo.Query{Filter: filter.PartitionKey(job.PartitionKey)})
	if err != nil || len(got) != want {
		b.T.Fatalf("the archive holds %d entities of %s, want %d: %v", len(got), job.PartitionKey, want, err)
	}
}

// DeletesFrom selects, for faultproxy.Proxy.PauseAt and rules, the entity group
// transactions that delete rows of table: the delete step of a move (an archive's copies
// to a table are inserts and replaces).
func DeletesFrom(table string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		body, err := io.ReadAll(r.Body)
		return err == nil && faultproxy.IsBatch(r) && strings.Contains(string(body), "DELETE ") && strings.Contains(string(body), "/"+table+"(")
	}
}
