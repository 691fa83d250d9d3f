package dataseries

import (
	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/retry"
)

// MaxPoints is the longest series one entity holds: the service's 252 custom properties,
// less the one that records applied operations (OpsProperty) and the one that holds the
// table's write history (repo.Options.TrackWrites, which New requires). A longer series
// does not fit one entity by design: store it as a wide entity (patterns/wideentity) or in
// a blob.
const MaxPoints = codec.MaxProperties - 2

// OpsProperty is the property where a series records the ids of the last operations it
// applied (see AddOptions.OpID). It never collides with a point, whose name ends with
// digits.
const OpsProperty = "AppliedOps"

// MaxOpIDLen is the longest operation id accepted.
const MaxOpIDLen = 64

// Defaults of Options.
const DefaultOpHistory = 64

// Layout is the shape of every series of a Store: how many points, and the property names
// that hold them.
type Layout struct {
	// Points is the number of points, 1 to MaxPoints: 24 for hourly counts of a day.
	Points int
	// Prefix starts the name of each point's property; the point's index follows,
	// zero-padded to the width of Points-1: Prefix "H" and 24 points give H00 to H23.
	// Defaults to "P".
	Prefix string
}

// Options configures a Store. The zero value (or nil) gives the documented defaults.
type Options struct {
	// Conflict is the backoff between the attempts of Add and Update that lost a race to
	// another writer. Zero fields take retry.Conflict()'s values, field by field
	// (Conflict{MaxRetries: 5} keeps the conflict delays); its Logger defaults to the
	// table's.
	Conflict retry.Policy
	// OpHistory is how many operation ids a series remembers (see AddOptions.OpID).
	// Defaults to DefaultOpHistory (64); at most 256.
	OpHistory int
}

// AddOptions configures Add. nil means the zero value.
type AddOptions struct {
	// OpID, if set, makes the operation idempotent: the series records the ids of the last
	// Options.OpHistory operations in OpsProperty, in the same write as the change, and an
	// operation whose id is recorded is not applied again. Use the id of what causes the
	// change (a queue message id, an event id), so that a redelivered message, a retried
	// call or a rerun after a crash counts once. At most MaxOpIDLen bytes, without spaces or
	// control characters.
	OpID string
}

// UpdateOptions configures Update. nil means the zero value.
type UpdateOptions struct {
	// OpID makes the update idempotent, as AddOptions.OpID.
	OpID string
}
