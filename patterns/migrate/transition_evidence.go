package migrate

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A transition whose response was lost cannot be decided by the stage the record shows:
// another process may have moved the record on before it is read again (an operator's
// Abort), and another transition to the same stage looks the same. So every write of the
// record (Plan's and each transition's) carries a fresh id, and the record keeps the ids
// of its last keptTransitions writes, newest first, each write carrying the ones it read
// forward: a write that landed is in the list until keptTransitions more followed it.

// keptTransitions is how many transition ids the record keeps.
const keptTransitions = 8

var transitionsRE = regexp.MustCompile(`^[0-9a-f]{16}(,[0-9a-f]{16}){0,7}$`)

// newTransitionID returns a random id for one write of the record.
func newTransitionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// transitionIDs validates the list a record holds: untrusted, like the rest of it.
func transitionIDs(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if !transitionsRE.MatchString(s) {
		return nil, errs.Invalid("state record", "Transitions is not a list of transition ids")
	}
	return strings.Split(s, ","), nil
}

// withTransition is the list a write with id stores: id, then the newest of those read.
func withTransition(id string, read []string) string {
	return strings.Join(append([]string{id}, read[:min(len(read), keptTransitions-1)]...), ",")
}

// decideTransition decides a transition (id, from -> to) whose write answered err, by
// the record now read after it: applied when err is nil or now lists id; not applied
// (errs.ErrPreconditionFailed) when the service refused it, or when now lists fewer
// than keptTransitions ids and not this one (a write that landed would be among them);
// unknown (errs.ErrOutcomeUnknown) otherwise.
func decideTransition(err error, id string, from, to Stage, now State) error {
	switch {
	case err == nil || slices.Contains(now.transitions, id):
		return nil
	case !errors.Is(err, repo.ErrOutcomeUnknown):
	case now.Stage != "" && len(now.transitions) < keptTransitions:
		err = errs.ErrPreconditionFailed
	}
	return fmt.Errorf("migrate: transition %s -> %s: %w", from, to, err)
}

// landedDespite decides a transition whose re-read failed, by the ids first: the re-read
// fails with ErrInProgress once another migration's Plan replaced the record the
// transition ended, and that Plan carried the ids forward, so a write that landed is
// still listed. It returns the record as read (another's) when the write is listed.
func landedDespite(lerr error, id string, now State) (State, error) {
	if slices.Contains(now.transitions, id) {
		return now, nil
	}
	return State{}, lerr
}
