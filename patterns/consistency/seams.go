package consistency

// seams are the test seams, unset in production: step runs after each step of a job (an
// error stops the job there, as a crash would); pageSize replaces RangeJobSize.
type seams struct {
	step     func(job, step string) error
	pageSize int
}
