package repo_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
)

func TestCheckOptions(t *testing.T) {
	if err := repo.CheckOptions[Employee](nil); err != nil {
		t.Fatalf("nil options: %v", err)
	}
	var ie *repo.InvalidInputError
	if err := repo.CheckOptions[Employee](&repo.Options{Concurrency: -2}); !errors.As(err, &ie) || ie.Field != "Options.Concurrency" {
		t.Fatalf("bad concurrency: %v", err)
	}
	type noKeys struct{ A string }
	if err := repo.CheckOptions[noKeys](nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("a type without keys: %v", err)
	}
}
