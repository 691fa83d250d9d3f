package consistency

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// unconditionalCopy is a companion whose copy of an entity sits at prefix + its RowKey
// and whose action deletes it without an ETag (If-Match *).
type unconditionalCopy struct {
	tbl    *repo.Table[codec.Entity]
	prefix string
}

func (c unconditionalCopy) Removal(ctx context.Context, e *codec.Entity) (Removal, error) {
	return Removal{Actions: []repo.Action{c.tbl.DeleteAction(e.PartitionKey, c.prefix+e.RowKey, nil)}}, nil
}

// A move of an entity whose RowKey, or whose companion copy's RowKey, holds U+2028 or
// U+2029, with a companion that deletes its copy unconditionally, single and by range, on a store that misaddresses
// such deletes in a transaction (Azurite: to the partition's empty RowKey or a prefix of
// the key) ends moved or refused, never half moved (the entity gone with its copy left,
// or the reverse) and never deleting a neighbour: the rows at the empty RowKey and at
// the key's prefixes stay. A single move that the store keeps refusing fails at most
// after its second attempt, permanently (ErrInvalidInput), not after every retry.
func TestLineSeparatorKeyMoveWithCompanionNeverDeletesANeighbourNorHalfMoves(t *testing.T) {
	t.Parallel()
	for _, sep := range []string{"\u2028", "\u2029"} {
		for _, c := range []struct{ how, rk, prefix string }{
			{"single", "e" + sep + "1", "copy-"}, {"range", "e" + sep + "1", "copy-"},
			{"single-copy", "e1", "copy" + sep}, {"range-copy", "e1", "copy" + sep},
		} {
			how, rk := strings.TrimSuffix(c.how, "-copy"), c.rk
			t.Run(c.how+map[string]string{"\u2028": "2028", "\u2029": "2029"}[sep], func(t *testing.T) {
				t.Parallel()
				b := setup(t, "")
				a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {unconditionalCopy{b.current, c.prefix}}}})
				if err != nil {
					t.Fatal(err)
				}
				var attempts atomic.Int32
				a.seams.step = func(job, step string) error {
					if step == "read" {
						attempts.Add(1)
					}
					return nil
				}
				neighbours := []string{"", "e", "copy-", "copy-e", "copy"}
				for _, n := range append([]string{rk, c.prefix + rk}, neighbours...) {
					if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: n, Properties: map[string]any{"V": int32(1)}}); err != nil {
						t.Fatal(err)
					}
				}
				var moveErr error
				var rep RangeReport
				if how == "single" {
					_, moveErr = a.ArchiveEntity(b.ctx, b.job("Sales", rk))
				} else {
					rep, moveErr = a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", RowKeyFrom: rk, RowKeyTo: "f", TargetTable: b.archive.Name()})
				}
				for _, n := range neighbours {
					if _, err := b.current.Get(b.ctx, "Sales", n); err != nil {
						t.Errorf("the neighbour %q is gone: %v", n, err)
					}
				}
				_, eErr := b.current.Get(b.ctx, "Sales", rk)
				_, cErr := b.current.Get(b.ctx, "Sales", c.prefix+rk)
				_, tErr := b.archive.Get(b.ctx, "Sales", rk)
				entityLeft, copyLeft := eErr == nil, cErr == nil
				if entityLeft != copyLeft || (!entityLeft && tErr != nil) {
					t.Fatalf("half moved (move: %v): entity in the source %v, its companion copy %v, in the target %v", moveErr, entityLeft, copyLeft, tErr == nil)
				}
				if entityLeft && moveErr == nil && (how == "single" || len(rep.Skipped) != 1 || rep.Skipped[0].RowKey != rk) {
					t.Fatalf("the entity stayed, reported neither as an error nor as skipped: %+v", rep)
				}
				if moveErr != nil && !errors.Is(moveErr, errs.ErrInvalidInput) {
					t.Fatalf("the move failed with %v, want moved or a permanent refusal", moveErr)
				}
				if n := attempts.Load(); how == "single" && n > 2 {
					t.Fatalf("the single move ran %d attempts; want at most 2", n)
				}
			})
		}
	}
}
