package repo_test

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An untracked Table of codec.Entity (dynamic) or a custom WriteIDProperty: does a read
// expose the tracking property, so that a write-back restores a stale history?
func TestAttackDynamicEntitySeesHistory(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	tracked := table[Counter](t, b, &repo.Options{TrackWrites: true})
	mustInsertCounter(t, tracked, 5)
	dyn := table[codec.Entity](t, b, nil)
	e, err := dyn.Get(b.ctx, "c", "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Properties[repo.DefaultWriteIDProperty]; ok {
		t.Errorf("untracked codec.Entity table exposes %s: %v", repo.DefaultWriteIDProperty, e.Properties)
	}
	// A tracked table with a custom property name; an untracked dynamic table with defaults.
	custom := table[Counter](t, b, &repo.Options{TrackWrites: true, WriteIDProperty: "MyIDs"})
	if err := custom.Insert(b.ctx, &Counter{PK: "c", RK: "2"}); err != nil {
		t.Fatal(err)
	}
	e, err = dyn.Get(b.ctx, "c", "2")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Properties["MyIDs"]; ok {
		t.Logf("note: an untracked dynamic table exposes a custom tracking property MyIDs (it only knows the default name): %v", e.Properties)
	}
}
