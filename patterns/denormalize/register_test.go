package denormalize

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Register takes the relation's kinds "denormalize.<kind>.<name>" and no other: registering
// them again is refused because Register holds them, while the slash-separated spelling
// "denormalize/<name>/<kind>" stays free for whoever wants it.
func TestRegisterTakesTheRelationsKindsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	r := b.across(b.queue(), nil)
	if r.SourceKind() != "denormalize.source.Manager" || r.TargetKind() != "denormalize.target.Manager" {
		t.Fatalf("kinds %q %q", r.SourceKind(), r.TargetKind())
	}
	reg := queueworker.NewRegistry()
	if err := r.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := queueworker.Handle(reg, r.SourceKind(), r.HandleSource); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("kind %q was not registered: %v", r.SourceKind(), err)
	}
	if err := queueworker.Handle(reg, r.TargetKind(), r.HandleTarget); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("kind %q was not registered: %v", r.TargetKind(), err)
	}
	if err := queueworker.Handle(reg, "denormalize/Manager/source", r.HandleSource); err != nil {
		t.Errorf("Register took the kind \"denormalize/Manager/source\": %v", err)
	}
	if err := queueworker.Handle(reg, "denormalize/Manager/target", r.HandleTarget); err != nil {
		t.Errorf("Register took the kind \"denormalize/Manager/target\": %v", err)
	}
}
