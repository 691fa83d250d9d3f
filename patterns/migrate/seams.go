package migrate

import "context"

// seams lets tests act in the narrowest windows of the algorithm. Only tests set it.
type seams struct {
	// copyWrite runs after a copy's old entity was read and before the copy is written
	// (or, the old entity gone, deleted).
	copyWrite func(ctx context.Context, pk, rk string)
	// stateRead runs after each read of the state record for a process's view.
	stateRead func()
}

func (s *seams) beforeCopyWrite(ctx context.Context, pk, rk string) {
	if s.copyWrite != nil {
		s.copyWrite(ctx, pk, rk)
	}
}
