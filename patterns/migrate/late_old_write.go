package migrate

import "context"

// No process writes the old layout once clean-up began, yet a request sent before it
// and abandoned by its client may still be applied then: an insert of an entity absent
// from the old layout (no condition holds it back) behind a copy the application wrote
// since, made of no old version (detachedETag)
// (TestCleanUpEndsWhenAnAbandonedInsertLandsBehindADetachedCopy). Deleting the old
// entity If-Match the version the copy records would meet 412 for ever, and refuse the
// entity's writes and clean-up. An old entity behind such a copy, that the service
// stamped at or after the copy's last write, is a request older than the application's
// write the copy holds: the reader reads the copy, and the old entity is deleted
// If-Match its own version. Behind a copy clean-up detached at an old version, an old
// entity at another version is a write made after the detach, a late request or a
// process past every stage bound alike, and may have been acknowledged: it stays, and
// the refusal is the operator's to resolve
// (TestAbandonedWriteLandingBetweenDetachAndDeleteIsKeptAndReported). One stamped before
// the copy is not explained so (a row written at the new keys by another hand after
// it): refused as before, the old entity stays.

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

// landedLate reports whether the old entity s behind the copy c is a request applied
// after c was written: c is a copy the application wrote once clean-up began (made of
// no old version), and the service stamped s at or after it.
func landedLate(c, s version) bool {
	return s.found && c.e != nil && s.e != nil && c.srcETag == detachedETag &&
		!c.e.Timestamp.IsZero() && !s.e.Timestamp.Before(c.e.Timestamp)
}
