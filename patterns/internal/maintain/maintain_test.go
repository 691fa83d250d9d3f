package maintain

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

func TestSamples(t *testing.T) {
	for _, c := range []struct{ in, want int }{{0, DefaultSamples}, {-1, 0}, {1, 1}, {500, 500}} {
		if got, err := Samples(c.in); err != nil || got != c.want {
			t.Errorf("Samples(%d) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	if _, err := Samples(-2); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("Samples(-2): %v, want ErrInvalidInput", err)
	}
}
