package consistency

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/retry"
)

// changedError reports that the delete of the entity of group (an index into the
// transaction's groups) failed because the entity changed since the batch read it
// (another version is there) or went (gone: a concurrent run moved it, or another
// client deleted it). Nothing of the transaction landed. It wraps nothing: the
// companions' After hooks must not run as after a 404.
type changedError struct {
	group int
	gone  bool
}

func (e *changedError) Error() string {
	if e.gone {
		return "consistency: an entity of the delete transaction went since the batch read it"
	}
	return "consistency: an entity of the delete transaction was written since the batch read it"
}

// errChangedDuringMove ends a pass of a batch whose other entities moved while some were
// written since the pass read them: the next pass reads and moves those again (a move
// restarts from fresh reads: restartable).
var errChangedDuringMove = fmt.Errorf("%w: entities of the batch were written between their copy and their delete", errRestart)

// leaveChanged ends a batch (moveBatch's result err): when its passes ran out with only
// entities that were written again before each of their deletes (b.rks, the last pass's
// keys), the rest of the range goes on without them. They stay in the source at their
// newer version, beside the copy of an older one in the target (the source stays
// authoritative; a later run of the job replaces that copy and moves them), and are
// reported (RangeReport.Changed). So do the keys of a batch narrowed to such entities
// (narrowed) whose last passes met a conflict of another kind: a concurrent delivery of
// the job rewrites their copies too, on each pass, so that each delivery's copy write
// fails in turn (412, 409). Any other error comes back as it is.
func leaveChanged(source string, b rangeBatch, narrowed bool, err error, skip *skipped) error {
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) || !errors.Is(ex.Err, errChangedDuringMove) && !(narrowed && restartable(ex.Err)) {
		return err
	}
	for _, rk := range b.rks {
		skip.changed(source, RangeKey{b.pk, rk})
	}
	return nil
}

// changed records that the entity at k was written during each pass of its move and left
// in the source for a later run.
func (s *skipped) changed(source string, k RangeKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = map[RangeKey]bool{}
	}
	if s.written[k] {
		return
	}
	s.written[k] = true
	s.log.Warn("archive range: entity written again before each delete of its move, left in the source for a later run of the job",
		zap.String("table", source), zap.String("partitionKey", k.PartitionKey), zap.String("rowKey", k.RowKey))
}

// changedList returns the keys changed recorded, in the service's order.
func (s *skipped) changedList() []RangeKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.written)
}
