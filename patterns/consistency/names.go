package consistency

import (
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// validateContainer checks a blob container name: 3 to 63 lowercase letters, digits and
// dashes, starting and ending with a letter or digit, no two dashes in a row.
func validateContainer(name string) error {
	if len(name) < 3 || len(name) > 63 {
		return errs.TooLarge("container", "a container name has 3 to 63 characters", len(name), 63)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
		if !ok {
			return errs.Invalid("container", "%q: only lowercase letters, digits and dashes", name)
		}
	}
	if name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--") {
		return errs.Invalid("container", "%q: must start and end with a letter or digit, without two dashes in a row", name)
	}
	return nil
}

func equalFold(a, b string) bool { return strings.EqualFold(a, b) }
