package retry

// What a fresh read may conclude about a write whose outcome is unknown.
//
// A write ends in errs.ErrOutcomeUnknown (Unknown) when an attempt of it may have been
// applied and nothing told (its response was lost, then its retry met a conflict, or the
// retries ran out). A pattern then reads again, and the temptation is to read "found / not
// found" as "my write did / did not land". Between the write and the read another writer
// may have acted: a child this call inserted may have been removed since, an entity this
// call deleted may have been put again, a value this call wrote may have been replaced.
// Acting on such a guess makes one call take effect twice and undoes another writer's
// acknowledged change. So the read proves only what nobody else could have caused:
//
//   - NotApplied: an entity that the write (atomic: a single write or one entity group
//     transaction) would have changed or deleted still holds the version, the ETag, that
//     the round read before writing. Any write to an entity gives it a new ETag, so none of
//     the write landed, and starting over from this read is safe.
//   - Applied: the read finds a trace that only this write leaves: its write id
//     (repo.Options.TrackWrites; repo decides that case itself), a blob name or an ETag
//     that this call itself produced.
//   - Unproven: anything else. An absent entity after an insert or a delete, a present one
//     after a delete, another version after an update, the very value this call wrote
//     (another writer may have written the same bytes): the answer is the
//     errs.ErrOutcomeUnknown error itself, never success and never "nothing written".
//
// Every pattern that re-decides after an unknown outcome gathers its evidence with
// Unchanged (and Or, for the several entities of one transaction; repo.DecideOutcome does
// both for a transaction's conditional actions) and answers with Decide. A reconciliation
// step (a worker refreshing copies or index entries, a recount) is not such a write: it
// promises a state derived from what it reads, not that one call took effect once, so it
// simply reads and derives again.

// Evidence is what a fresh read shows about a write whose outcome is unknown.
type Evidence int

const (
	// Unproven: the read shows nothing that this write alone explains.
	Unproven Evidence = iota
	// NotApplied: an entity that the write would have changed still holds the version the
	// round read before writing: none of the (atomic) write landed.
	NotApplied
	// Applied: the read shows a trace that only this write leaves (a write id, a fresh
	// blob name or an ETag the call produced).
	Applied
)

// String returns the evidence's name for logs.
func (e Evidence) String() string {
	switch e {
	case NotApplied:
		return "not applied"
	case Applied:
		return "applied"
	}
	return "unproven"
}

// Unchanged returns the evidence of one entity that the write would have replaced or
// deleted: read is the ETag the round read before writing, now the ETag a fresh read
// finds ("" when the entity is absent). The same non-empty ETag is NotApplied; anything
// else is Unproven: an absent or changed entity may be this write's doing or another's.
func Unchanged(read, now string) Evidence {
	if read != "" && read == now {
		return NotApplied
	}
	return Unproven
}

// Or combines the evidence of two entities of one atomic write (a transaction applies all
// of its actions or none): the first proof wins, Unproven only when neither proves.
func (e Evidence) Or(f Evidence) Evidence {
	if e != Unproven {
		return e
	}
	return f
}

// Decide returns what a round of Optimistic answers for a write that ended in err, an
// errs.ErrOutcomeUnknown, given the evidence of a fresh read: Again(err) for NotApplied
// (the next round reads and writes again), nil for Applied, and err itself for Unproven.
// A nil err is returned as nil.
func Decide(err error, e Evidence) error {
	if err == nil {
		return nil
	}
	switch e {
	case NotApplied:
		return Again(err)
	case Applied:
		return nil
	}
	return err
}
