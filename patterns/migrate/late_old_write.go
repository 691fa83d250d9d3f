package migrate

import "context"

// No process writes the old layout once clean-up began, yet a request sent before it
// and abandoned by its client may still be applied then, after clean-up detached the
// entity's copy: an insert of an entity absent from the old layout (no condition holds
// it back) behind a copy the application wrote since, made of no old version
// (TestCleanUpEndsWhenAnAbandonedInsertLandsBehindADetachedCopy), or a write If-Match
// the old version the copy was detached at, landing between the detach and the delete
// (TestCleanUpEndsWhenAnAbandonedWriteLandsBetweenDetachAndDelete). Deleting the old
// entity If-Match the version the copy records would then meet 412 for ever, and refuse
// the entity's writes and clean-up. An old entity at another version than the copy
// records, that the service stamped at or after the copy's last write, is such a late
// request: the reader reads the copy, the request was never acknowledged, and the old
// entity is deleted If-Match its own version. One stamped before the copy is not
// explained so (a row written at the new keys by another hand after it): refused as
// before, the old entity stays.

// deleteIfLate is deleteOldBehind's answer to the 412 (err) of its delete If-Match the
// version c records: the old entity read again, a late request (landedLate) is deleted
// If-Match its own version; anything else keeps err. Cost: one read, on that path only.
func (m *Migration[O, N]) deleteIfLate(ctx context.Context, c version, pk, rk string, err error) error {
	s, rerr := m.readSource(ctx, pk, rk)
	if rerr != nil || !landedLate(c, s) {
		return err
	}
	return m.deleteOld(ctx, pk, rk, s.etag)
}

// landedLate reports whether the old entity s behind the detached copy c is a request
// applied after c was written: s is at another version than c records, and the service
// stamped it at or after c.
func landedLate(c, s version) bool {
	return s.found && c.e != nil && s.e != nil && s.etag != c.srcETag &&
		!c.e.Timestamp.IsZero() && !s.e.Timestamp.Before(c.e.Timestamp)
}
