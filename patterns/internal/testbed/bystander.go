package testbed

import (
	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// LineSeparators are the two characters after which Azurite's $batch parser stops
// reading a key: a transaction's delete of a key holding one addresses the row with the
// empty RowKey of the partition (the bystander) instead.
var LineSeparators = []struct{ Name, Rune string }{{"U+2028", "\u2028"}, {"U+2029", "\u2029"}}

// Bystander writes the row with the empty RowKey in partition pk of table (the bed's
// table when table is ""), the row that a misaddressed delete would remove.
func (b *Bed) Bystander(table, pk string) {
	b.T.Helper()
	if err := b.rawTable(table).Upsert(b.Ctx, &codec.Entity{PartitionKey: pk, Properties: map[string]any{"Bystander": true}}, nil); err != nil {
		b.T.Fatal(err)
	}
}

// MustHaveBystander fails the test unless the row written by Bystander is still there.
func (b *Bed) MustHaveBystander(table, pk string) {
	b.T.Helper()
	if _, err := b.rawTable(table).Get(b.Ctx, pk, ""); err != nil {
		b.T.Fatalf("the row with the empty RowKey of partition %q (a misaddressed delete's victim): %v", pk, err)
	}
}

// rawTable is Raw, or a table of dynamic entities named table on the direct clients.
func (b *Bed) rawTable(table string) *repo.Table[codec.Entity] {
	b.T.Helper()
	if table == "" || table == b.Table {
		return b.Raw
	}
	t, err := repo.New[codec.Entity](b.Direct.Tables, table, &repo.Options{Retry: FastRetry()})
	if err != nil {
		b.T.Fatal(err)
	}
	return t
}
