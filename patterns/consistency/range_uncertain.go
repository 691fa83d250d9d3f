package consistency

import (
	"errors"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// uncertainDeletes counts, in a batch's report, the entities whose delete transaction
// lost its response (repo.ErrOutcomeUnknown) and had landed. The batch then starts over
// from fresh reads, which no longer find them: without this they would be archived and
// gone from the source, and counted nowhere. An entity counts as moved when the next
// attempt finds it gone from the source while the target's copy, read before the source,
// records the version the lost transaction deleted (the single move's rule for a 404).
type uncertainDeletes struct {
	version map[string]string // RowKey -> the version its lost transaction deleted
	landed  int
}

// sent records the entities of a delete transaction (gs) whose outcome err left unknown.
func (u *uncertainDeletes) sent(gs []removalGroup, err error) {
	if !errors.Is(err, errs.ErrOutcomeUnknown) || errors.Is(err, errMoveStepFailed) {
		return // known, or counted as deleted already (deleteGroups)
	}
	if u.version == nil {
		u.version = map[string]string{}
	}
	for _, g := range gs {
		u.version[g.e.RowKey] = g.e.ETag
	}
}

// settle counts the recorded entities that an attempt's reads settle as moved: absent
// from the source read (unread: its keys not read, still true) and recorded by the
// target's copy at their version (tgt). Every recorded entity is settled by that attempt,
// moved or not: one read again is moved or left by the attempt itself.
func (u *uncertainDeletes) settle(unread map[string]bool, tgt map[string]copyState) {
	for rk, v := range u.version {
		if st := tgt[rk]; unread[rk] && st.exists && st.sourceETag == v {
			u.landed++
		}
		delete(u.version, rk)
	}
}

// take returns the entities counted as moved since the last take.
func (u *uncertainDeletes) take() int {
	n := u.landed
	u.landed = 0
	return n
}
