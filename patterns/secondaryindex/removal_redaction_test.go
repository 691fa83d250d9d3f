package secondaryindex_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An archive move asked to remove a row that is a copy, not an entity (a job naming the
// copy, a range move over a partition that holds copies), is refused: the refusal, which
// ends in the job's poison record and logs, names the index and the partition, never the
// copy's RowKey, which holds the indexed value.
func TestRemovalOfACopyRowNeverCarriesIndexCopyKey(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail)
	const email = "removal.secret@contoso.com"
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", email)); err != nil {
		t.Fatal(err)
	}
	rows, err := repo.New[codec.Entity](b.Clients.Tables, b.Table, nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := rows.Collect(b.Ctx, repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var cp *codec.Entity
	for i := range all {
		if strings.Contains(all[i].RowKey, "removal.secret") {
			cp = &all[i]
		}
	}
	if cp == nil {
		t.Fatalf("no copy row among %d rows", len(all))
	}
	_, err = x.Removal(b.Ctx, cp)
	if !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("Removal of a copy row: %v; want ErrInvalidInput", err)
	}
	if s := fmt.Sprintf("%v %+v", err, err); strings.Contains(s, "removal.secret") {
		t.Errorf("the refusal carries the copy's key: %s", s)
	}
}

// A range archive over a whole partition selects the copies too, and is refused before
// anything is written (permanent: its job ends in the poison queue, the error its last
// text). The job names a range, not the copy, so the refusal's text must not name it.
func TestArchiveRangeOverCopiesNeverCarriesIndexCopyKey(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail)
	const email = "range.secret@contoso.com"
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", email)); err != nil {
		t.Fatal(err)
	}
	a, target := b.Archiver(x)
	_, err := a.ArchiveRange(b.Ctx, b.RangeJob(target, "Sales", "", ""))
	if !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("a range over copies: %v, want invalid input", err)
	}
	if s := fmt.Sprintf("%v %+v", err, err); strings.Contains(s, "range.secret") {
		t.Errorf("the refusal carries the copy's key: %s", s)
	}
}
