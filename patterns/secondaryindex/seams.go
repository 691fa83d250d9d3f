package secondaryindex

import "time"

// seams is the one thing tests set on an Intra or an Inter (see export_test.go).
// afterSubmit replaces the answer of each Intra transaction, to play the answers of a
// retried transaction whose first attempt landed. afterStage runs between the steps of
// Inter's writes and reconciliations ("written", "read", "index <name> done"); an error
// stops the run there, as a crash of the process would. clock is the time of
// CollectTombstones, so that tests need not wait for TombstoneAge.
type seams struct {
	afterSubmit func(err error) error
	afterStage  func(stage string) error
	clock       func() time.Time
}

// answer is the transaction's answer err as the seam, if set, replaces it.
func (s seams) answer(err error) error {
	if s.afterSubmit == nil {
		return err
	}
	return s.afterSubmit(err)
}

// after runs the afterStage seam, if set, after stage.
func (s seams) after(stage string) error {
	if s.afterStage == nil {
		return nil
	}
	return s.afterStage(stage)
}

// now is the time as CollectTombstones sees it.
func (s seams) now() time.Time {
	if s.clock == nil {
		return time.Now()
	}
	return s.clock()
}
