package migrate

import "github.com/tablepatterns/tablepatterns/repo"

// advisory returns o for the progress writes: one attempt each, no retry. A page waits
// for its progress write, so a write retried on the migration's policy (a worker's batch
// policy waits minutes) would hold every page of a throttled or failing control table
// for the sake of a count; one refused is given up (its counts are missing from the
// sums), and the next page's write reads the row again.
func advisory(o *repo.Options) *repo.Options {
	a := *o
	a.Retry.MaxRetries = -1
	return &a
}
