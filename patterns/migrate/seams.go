package migrate

import "context"

// seams lets tests act in the narrowest windows of the algorithm. Only tests set it.
type seams struct {
	// scanned runs for each old entity of a range job's page after the page was scanned
	// and before its copy is read.
	scanned func(ctx context.Context, pk, rk string)
	// copyWrite runs after a copy's old entity was read and before the copy is written
	// (or, the old entity gone, deleted).
	copyWrite func(ctx context.Context, pk, rk string)
	// copyWritten runs after a copy write (or delete) succeeded and before converge's
	// confirming re-read of the old entity.
	copyWritten func(ctx context.Context, pk, rk string)
	// getBetween runs in Get at CutOver and CleanUp, after the copy was read and before
	// the old entity is read.
	getBetween func(pk, rk string)
	// newWrite runs in a write once clean-up began, after the copy was read and before
	// it is written.
	newWrite func(pk, rk string)
	// stateRead runs after each read of the state record for a process's view.
	stateRead func()
	// chunkLate runs when a chunk's shared steps outlast its deadline and its entities
	// go through the per-entity rule.
	chunkLate func()
	// progress runs after a range job's page did its work and before its progress is
	// recorded (a worker killed there leaves the page to its redelivery).
	progress func(ctx context.Context, job Job)
}

func (s *seams) beforeCopyWrite(ctx context.Context, pk, rk string) {
	if s.copyWrite != nil {
		s.copyWrite(ctx, pk, rk)
	}
}

func (s *seams) afterCopyWrite(ctx context.Context, pk, rk string) {
	if s.copyWritten != nil {
		s.copyWritten(ctx, pk, rk)
	}
}

func (s *seams) afterScan(ctx context.Context, pk, rk string) {
	if s.scanned != nil {
		s.scanned(ctx, pk, rk)
	}
}

func (s *seams) lateChunk() {
	if s.chunkLate != nil {
		s.chunkLate()
	}
}

func (s *seams) beforeProgress(ctx context.Context, job Job) {
	if s.progress != nil {
		s.progress(ctx, job)
	}
}
