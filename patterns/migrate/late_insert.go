package migrate

// An Upsert of an entity absent from the old layout is an insert there, and no condition
// holds back an insert: abandoned before clean-up and applied by the service once
// clean-up began, it stores an old entity behind a copy the application wrote since
// (TestCleanUpEndsWhenAnAbandonedInsertLandsBehindADetachedCopy). That copy records no
// old version (detachedETag): it was written once finish had found the old entity gone,
// and no process writes the old layout from then on. An old entity the service stored
// after that copy is therefore such a late request, older than the copy: it is deleted
// If-Match its own version, where deleting it If-Match the version the copy records
// would meet 412 for ever and refuse the entity's writes and clean-up. One stored before
// the copy is not explained so (a row written by another hand): refused as before, the
// old entity stays.

// lateInsert reports whether the old entity s behind the detached copy c is a request
// sent before clean-up and applied after c was written: c records no old version and
// the service stamped s at or after c.
func lateInsert(c, s version) bool {
	return c.srcETag == detachedETag && s.found && c.e != nil && s.e != nil &&
		!c.e.Timestamp.IsZero() && !s.e.Timestamp.Before(c.e.Timestamp)
}
