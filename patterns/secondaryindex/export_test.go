package secondaryindex

import "time"

// SetTestHook makes x call f between the steps of its writes and reconciliations
// ("written", "read", "index <name> done"); an error from f stops the run there, as a
// crash of the process would.
func SetTestHook[T any](x *Inter[T], f func(stage string) error) { x.seams.afterStage = f }

// SetClock makes x's CollectTombstones read now from f.
func SetClock[T any](x *Inter[T], f func() time.Time) { x.seams.clock = f }

// SetIntraAfterSubmit makes x pass the outcome of each of its transactions through f.
func SetIntraAfterSubmit[T any](x *Intra[T], f func(error) error) { x.seams.afterSubmit = f }
