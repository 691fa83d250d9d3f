package consistency

// seams are the package's test seams: unset in production, set by tests in this package.
type seams struct {
	// step, when set, is called after each step of a job; an error stops the job there,
	// as a crash would.
	step func(job, step string) error
	// pageSize, when set, replaces RangeJobSize: a range test spans its pages and
	// continuations with fewer entities.
	pageSize int
}
