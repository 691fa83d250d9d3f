package retry

import "github.com/tablepatterns/tablepatterns/internal/errs"

// sanitize returns err's text without credentials (see errs.Redact, the one redaction of
// the SDK).
func sanitize(err error) string { return errs.Redact(err) }
