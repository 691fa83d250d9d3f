package repo_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// A tracked insert lands, its response is lost; before the retry another tracked writer
// deletes the entity and inserts it again. The retry meets 409 and a history that "reaches
// its insert" without our id. Our insert DID happen, so a plain ErrAlreadyExists ("nothing
// written") would be a lie: the answer is nil or ErrOutcomeUnknown.
func TestTrackedInsertDeletedAndReinsertedBeforeRetryIsNeverNothingWritten(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	other := table[Counter](t, b, &repo.Options{TrackWrites: true})
	tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() {
		if err := other.Delete(b.ctx, "c", "1", nil); err != nil {
			t.Error(err)
		}
		if err := other.Insert(b.ctx, &Counter{PK: "c", RK: "1", N: 99}); err != nil {
			t.Error(err)
		}
	})})
	b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropAfterForward()})
	err := tbl.Insert(b.ctx, &Counter{PK: "c", RK: "1", N: 1})
	if b.proxy.Fired("lost") != 1 {
		t.Fatal("the drop did not fire")
	}
	if errors.Is(err, repo.ErrAlreadyExists) && !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("insert that landed (then deleted by another) returned a plain refusal: %v", err)
	}
}

// The same inside a transaction: the insert action alone is not proof of "not committed".
func TestTrackedTxInsertDeletedAndReinsertedBeforeRetryIsNeverNothingWritten(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	other := table[Counter](t, b, &repo.Options{TrackWrites: true})
	tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() {
		for _, rk := range []string{"1", "2"} {
			if err := other.Delete(b.ctx, "c", rk, nil); err != nil {
				t.Error(err)
			}
			if err := other.Insert(b.ctx, &Counter{PK: "c", RK: rk, N: 99}); err != nil {
				t.Error(err)
			}
		}
	})})
	b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	_, err := repo.Submit(b.ctx, tbl.InsertAction(&Counter{PK: "c", RK: "1"}), tbl.InsertAction(&Counter{PK: "c", RK: "2"}))
	if err == nil || !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("committed transaction whose entities were replaced: %v, want ErrOutcomeUnknown", err)
	}
}

// A tracked conditional update lands, its response is lost; before the retry
// another writer MERGES a property on top of it (an unconditional merge upsert, which
// carries no write id and keeps the stored history; or a conditional merge from an
// untracked Table). The history head is still our id, so the retry says "applied, and the
// stored version is yours" and hands out the CURRENT ETag. The caller's value does not hold
// the other writer's property: its next conditional Replace must fail (412), not silently
// erase the merged property.
func TestTrackedUpdateSupersededByAMergeNeverGetsTheLiveETag(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"tracked unconditional merge upsert", "untracked conditional merge"} {
		t.Run(variant, func(t *testing.T) {
			b := setup(t, true)
			trackedOther := table[Counter](t, b, &repo.Options{TrackWrites: true})
			untrackedOther := table[Counter](t, b, nil)
			tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() {
				var err error
				if variant == "tracked unconditional merge upsert" {
					err = trackedOther.Upsert(b.ctx, &Counter{PK: "c", RK: "1", X: 7}, &repo.UpsertOptions{Mode: repo.Merge, Properties: []string{"X"}})
				} else {
					var c Counter
					if c, err = untrackedOther.Get(b.ctx, "c", "1"); err == nil {
						c.X = 7
						err = untrackedOther.Update(b.ctx, &c, &repo.UpdateOptions{Mode: repo.Merge, Properties: []string{"X"}})
					}
				}
				if err != nil {
					t.Error(err)
				}
			})})
			mustInsertCounter(t, tbl, 5)
			a, _ := tbl.Get(b.ctx, "c", "1")
			b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
			a.N++
			if err := tbl.Update(b.ctx, &a, nil); err != nil {
				t.Fatalf("tracked update that landed: %v", err)
			}
			a.N = 100
			err := tbl.Update(b.ctx, &a, nil)
			got, _ := tbl.Get(b.ctx, "c", "1")
			if err == nil {
				t.Fatalf("a value superseded by another writer's merge kept a live ETag: its next update overwrote the merge (X = %v, want 7)", got.X)
			}
			if !errors.Is(err, repo.ErrPreconditionFailed) {
				t.Fatalf("next update: %v, want ErrPreconditionFailed", err)
			}
		})
	}
}

// A tracked conditional update lands, its response is lost; before the retry a
// foreign application writes back, unconditionally, a copy of the entity it read before
// our update (with the TpWriteIDs property as it was, a property it knows nothing about).
// The stored history then holds the id of the version we replaced and not ours. Our write
// happened, so the retry must not conclude "not applied" with a plain ErrPreconditionFailed.
func TestTrackedUpdateNeverRefusedWhenAForeignWriterRestoresAStaleHistory(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	raw := testenv.TableService(t).NewClient(b.name)
	tbl := table[Counter](t, b, &repo.Options{TrackWrites: true})
	mustInsertCounter(t, tbl, 5)
	a, _ := tbl.Get(b.ctx, "c", "1") // the tracker learns the history of this version
	// The foreign app reads the same version now.
	resp, err := raw.GetEntity(b.ctx, "c", "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var stale map[string]any
	if err := json.Unmarshal(resp.Value, &stale); err != nil {
		t.Fatal(err)
	}
	copyBack := map[string]any{"PartitionKey": "c", "RowKey": "1", "N": "5", "N@odata.type": "Edm.Int64",
		repo.DefaultWriteIDProperty: stale[repo.DefaultWriteIDProperty]}
	body, _ := json.Marshal(copyBack)

	tbl = table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() {
		if _, err := raw.UpsertEntity(b.ctx, body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
			t.Error(err)
		}
	})})
	// tbl is a new Table: let it see the version too.
	a, _ = tbl.Get(b.ctx, "c", "1")
	b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
	a.N++
	err = tbl.Update(b.ctx, &a, nil)
	if b.proxy.Fired("lost") != 1 {
		t.Fatal("the drop did not fire")
	}
	if errors.Is(err, repo.ErrPreconditionFailed) && !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("update that landed returned a plain refusal because a stale history was written back: %v", err)
	}
}

// The package promises nil iff applied "even when other writers (tracked, sharing the
// Table) build on the write before the retry". A tracked writer sharing the Table builds on
// our landed write after reading it through a Query with Select (a cheap read of the one
// property it changes), so the tracker never saw that version's history. Its write must
// not start a new chain "X ?" that erases ours: our retry answers nil for the write that
// was applied (the one tracking is turned on to recognise).
func TestTrackedWriteRecognisedAfterASelectReadWriterBuildsOnIt(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	var tbl *repo.Table[Counter]
	var otherErr error
	tbl = table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() {
		cs, err := tbl.Collect(b.ctx, repo.Query{Filter: filter.Point("c", "1"), Select: []string{"PartitionKey", "RowKey", "N"}})
		if err == nil && len(cs) == 1 {
			cs[0].N++
			err = tbl.Update(b.ctx, &cs[0], &repo.UpdateOptions{Mode: repo.Merge, Properties: []string{"N"}})
		}
		otherErr = err
	})})
	mustInsertCounter(t, tbl, 5)
	a, _ := tbl.Get(b.ctx, "c", "1")
	b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
	a.N++
	err := tbl.Update(b.ctx, &a, nil)
	if otherErr != nil {
		t.Fatal(otherErr)
	}
	got, _ := tbl.Get(b.ctx, "c", "1")
	if got.N != 7 {
		t.Fatalf("N = %d, want 7", got.N)
	}
	if err != nil {
		t.Fatalf("tracked update that was applied (N = 7) returned %v, want nil", err)
	}
}

// A tracked transaction [insert Y, update X] commits, its response is lost; before
// the retry another writer replaces Y (an upsert: no write id, history removed). The retry
// judges Y first (unknown), then X (ours: applied) and returns nil. Every action gets an
// ETag, not only those after the first applied one: with an empty ETag the caller's next
// Update of Y would be UNCONDITIONAL and silently overwrite the other writer. Y's value gets
// an ETag that matches nothing (ErrPreconditionFailed on the next conditional write).
func TestTrackedTxGivesEveryActionAnETag(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	other := table[Counter](t, b, &repo.Options{TrackWrites: true})
	tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() {
		if err := other.Upsert(b.ctx, &Counter{PK: "c", RK: "y", N: 42}, nil); err != nil {
			t.Error(err)
		}
	})})
	mustInsertCounter(t, tbl, 5)
	x, _ := tbl.Get(b.ctx, "c", "1")
	x.N++
	y := &Counter{PK: "c", RK: "y", N: 1}
	b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	etags, err := repo.Submit(b.ctx, tbl.InsertAction(y), tbl.UpdateAction(&x, nil))
	if err != nil {
		t.Fatalf("committed transaction: %v", err)
	}
	t.Logf("etags %q, y.ETag %q, x.ETag %q", etags, y.ETag, x.ETag)
	y.N = 100
	err = tbl.Update(b.ctx, y, nil)
	got, _ := tbl.Get(b.ctx, "c", "y")
	if err == nil {
		t.Fatalf("the next update of Y went through unconditionally (Y's ETag was left empty) and overwrote the other writer: N = %d (other wrote 42)", got.N)
	}
}

// A version read through Query (not Get), an update that lands with its response lost,
// another writer (sharing the same Table) builds on it: the retry knows exactly.
func TestTrackedRetryKnowsAfterAQueryReadAndASharedWriter(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	var tbl *repo.Table[Counter]
	var otherErr error
	tbl = table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() {
		// The other writer shares tbl and also reads through Query.
		cs, err := tbl.Collect(b.ctx, repo.Query{Filter: filter.Point("c", "1")})
		if err == nil && len(cs) == 1 {
			cs[0].N++
			err = tbl.Update(b.ctx, &cs[0], nil)
		}
		otherErr = err
	})})
	mustInsertCounter(t, tbl, 5)
	cs, err := tbl.Collect(b.ctx, repo.Query{Filter: filter.PartitionKey("c")})
	if err != nil || len(cs) != 1 {
		t.Fatal(cs, err)
	}
	a := cs[0]
	b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
	a.N++
	err = tbl.Update(b.ctx, &a, nil)
	if otherErr != nil {
		t.Fatal(otherErr)
	}
	got, _ := tbl.Get(b.ctx, "c", "1")
	if got.N != 7 || err != nil {
		t.Fatalf("N = %d (want 7), err = %v (want nil)", got.N, err)
	}
	a.N = 100
	if err := tbl.Update(b.ctx, &a, nil); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("superseded value: %v", err)
	}
}
