package denormalize

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Register takes the kinds "denormalize.<kind>.<name>" and, for messages enqueued before
// an upgrade, the kinds of earlier releases: registering any of them again is refused
// because Register holds it already.
func TestRegisterTakesTheNewAndTheLegacyKinds(t *testing.T) {
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
	for _, kind := range []string{r.SourceKind(), "denormalize/Manager/source"} {
		if err := queueworker.Handle(reg, kind, r.HandleSource); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("kind %q was not registered: %v", kind, err)
		}
	}
	for _, kind := range []string{r.TargetKind(), "denormalize/Manager/target"} {
		if err := queueworker.Handle(reg, kind, r.HandleTarget); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("kind %q was not registered: %v", kind, err)
		}
	}
}
