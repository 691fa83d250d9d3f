package indexentity

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An archive move asked to remove a row that is an index entity (a range move over a
// partition that holds them, a job naming one) is refused: the refusal, which ends in the
// job's poison record and logs, names the index, never the index entity's RowKey, which
// holds the indexed value. A Delete of such a key is refused the same way.
func TestRemovalOfAnIndexEntityNeverCarriesItsKey(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(&SamePartitionOptions{Conflict: fast})
	if err := ix.Insert(b.Ctx, emp("Sales", "000001", "Secretvalue")); err != nil {
		t.Fatal(err)
	}
	pages := b.indexPages(ix, "Sales")
	if len(pages) != 1 || !strings.Contains(pages[0].RowKey, "Secretvalue") {
		t.Fatalf("index entities %v; want the one of Secretvalue", pages)
	}
	_, err := ix.Removal(b.Ctx, &pages[0])
	derr := ix.Delete(b.Ctx, "Sales", pages[0].RowKey, nil)
	for name, err := range map[string]error{"Removal": err, "Delete": derr} {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Fatalf("%s of an index entity: %v; want ErrInvalidInput", name, err)
		}
		if s := fmt.Sprintf("%v %+v", err, err); strings.Contains(s, "Secretvalue") {
			t.Errorf("%s's refusal carries the index entity's key: %s", name, s)
		}
	}
}

// The same for an Eventual whose TableStore shares the primary's table: a row of an index
// partition ("idx!<name>!<value>") given as an entity is refused without its PartitionKey.
func TestEventualRefusalOfAnIndexPartitionNeverCarriesItsKey(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ts := must(NewTableStore(must(repo.New[codec.Entity](b.Clients.Tables, b.Table, &repo.Options{Retry: fast})), "LastName", nil))
	x := b.eventual(ts, b.queue())
	pk := must(ts.PartitionKey("Secretvalue"))
	row := &codec.Entity{PartitionKey: pk, RowKey: "000000", Properties: map[string]any{}}
	_, err := x.Removal(b.Ctx, row)
	derr := x.Delete(b.Ctx, pk, "000000", nil)
	for name, err := range map[string]error{"Removal": err, "Delete": derr} {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Fatalf("%s of an index partition's row: %v; want ErrInvalidInput", name, err)
		}
		if s := fmt.Sprintf("%v %+v", err, err); strings.Contains(s, "Secretvalue") {
			t.Errorf("%s's refusal carries the index partition's key: %s", name, s)
		}
	}
}
