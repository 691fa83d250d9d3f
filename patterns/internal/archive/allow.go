package archive

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// ErrNotAllowed: a job names a table or container outside the archiver's allowlists.
// Both archive packages export this one value, so errors.Is matches either's.
var ErrNotAllowed = errors.New("archive: table or container not allowed for this archiver")

// Allowlist is the tables (by case-insensitive name prefix) and containers an archiver
// may touch. A nil list allows everything.
type Allowlist struct {
	TablePrefixes []string
	Containers    []string
}

// Validate refuses an empty prefix, which would allow every table.
//
// Errors: ErrInvalidInput.
func (l Allowlist) Validate() error {
	for _, p := range l.TablePrefixes {
		if p == "" {
			return errs.Invalid("Options.AllowedTablePrefixes", "holds an empty prefix (it would allow every table)")
		}
	}
	return nil
}

// Check checks tables and a container against the lists ("" is skipped).
//
// Errors: ErrNotAllowed.
func (l Allowlist) Check(table, otherTable, container string) error {
	for _, t := range []string{table, otherTable} {
		if t == "" || l.TablePrefixes == nil {
			continue
		}
		ok := false
		for _, p := range l.TablePrefixes {
			if len(t) >= len(p) && strings.EqualFold(t[:len(p)], p) {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("%w: table %s (allowed prefixes: %s)", ErrNotAllowed, t, strings.Join(l.TablePrefixes, ", "))
		}
	}
	if container != "" && l.Containers != nil && !slices.Contains(l.Containers, container) {
		return fmt.Errorf("%w: container %s (allowed: %s)", ErrNotAllowed, container, strings.Join(l.Containers, ", "))
	}
	return nil
}
