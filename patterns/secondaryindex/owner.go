package secondaryindex

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/maintain"
	"github.com/tablepatterns/tablepatterns/repo"
)

// ownership says whose a stored copy of a unique index is, as copyOwner decides.
type ownership int

const (
	// ownerUnknown: the copy cannot tell (it does not decode, or it carries neither a
	// primary value nor the entity's projection, or the entity it names cannot be read).
	ownerUnknown ownership = iota
	// ownedByEntity: the copy is the entity's.
	ownedByEntity
	// ownedByOther: the copy names another entity, and that entity is live and its
	// value gives the copy's key.
	ownedByOther
	// ownerVanished: the copy names another entity that is not a live entity with the
	// copy's value (gone, or holding another value now): nobody can claim it by name.
	ownerVanished
)

// holder tells whether the entity whose primary value is owner holds the copy key k of
// the index i: ownedByOther when it is a live entity whose value in i gives k,
// ownerVanished when no such entity exists, ownerUnknown when its row cannot be read as
// an entity. Verify answers from the partition it loaded; Backfill, Repair and Removal
// with one point read (pointHolder).
type holder func(ctx context.Context, owner string) (ownership, error)

// copyOwner is the one rule that decides whose the stored copy cp of the secondary index
// i (read at the key v's value gives in partition pk) is: Verify (Conflict, Stale),
// BackfillPartition and Repair (a copy of another is never taken over) and Removal (only
// the entity's own copy is deleted) all ask it, so they cannot disagree.
//
// A copy of an index with duplicates names its owner in its key (value, then primary
// value): v's. A copy of a unique index is decoded as T (encrypted properties decrypted,
// with ctx for the key resolver): when it carries a primary value, that value names its
// owner, and a name other than v's is believed only when holds confirms it (the named
// entity is live and its value gives this key; otherwise ownerVanished). Otherwise (the
// index's Properties leave the primary value out) it is v's only when every stored
// property equals v's projection for the index, which is what every write of this
// package stores with v. A copy that does not decode, a partial copy that differs from
// v's projection, and an encrypted copy without a primary value (ciphertexts cannot be
// compared) have an unknown owner. The stored copy is untrusted: nothing in it is taken
// for v's unless it proves so. A failure to read the copy or its named owner that is not
// the data's fault (the key holder out of reach, ctx done, 503) decides nothing: it is
// returned, and the caller fails rather than guess.
func (x *Intra[T]) copyOwner(ctx context.Context, cp *codec.Entity, v *T, pk string, i int, holds holder) (ownership, error) {
	ix := x.all[i]
	if ix.AllowDuplicates {
		return ownedByEntity, nil // the key holds the primary value
	}
	cv, err := maintain.Decode(ctx, x.c, cp)
	switch {
	case errors.Is(err, errs.ErrInvalidInput):
		return ownerUnknown, nil
	case err != nil:
		return ownerUnknown, err
	}
	if o := x.all[0].valueOf(&cv); o != "" {
		if o == x.all[0].valueOf(v) {
			return ownedByEntity, nil
		}
		return holds(ctx, o)
	}
	if x.c.Encrypted() {
		return ownerUnknown, nil
	}
	want, err := project(x.c, v, pk, cp.RowKey, ix.props)
	if err == nil && sameProperties(cp.Properties, want.Properties) { // Verify's comparison
		return ownedByEntity, nil
	}
	return ownerUnknown, nil
}

// holdsKey is holder's verdict on the stored entity o, read at the primary RowKey ownerRK:
// ownedByOther when o is that entity (its own primary value gives ownerRK) and its value
// in the index i gives the copy key k, ownerVanished otherwise.
func (x *Intra[T]) holdsKey(o *T, ownerRK string, i int, k string) ownership {
	_, primary, rk, err := x.primaryOf(o)
	if err != nil || rk != ownerRK {
		return ownerVanished
	}
	val, err := x.all[i].value(o)
	if err != nil || val == "" {
		return ownerVanished
	}
	if got, err := x.all[i].intraKey(val, primary); err != nil || got != k {
		return ownerVanished
	}
	return ownedByOther
}

// pointHolder is the holder of the copy key k of the index i in partition pk that reads
// the named owner's primary row: one point read, made only when a copy names an entity
// other than the one asking.
func (x *Intra[T]) pointHolder(pk string, i int, k string) holder {
	return func(ctx context.Context, owner string) (ownership, error) {
		rk, err := x.all[0].intraKey(owner, "")
		if err != nil {
			return ownerVanished, nil // a name no entity can have
		}
		e, err := x.dyn.Get(ctx, pk, rk)
		switch {
		case errors.Is(err, repo.ErrNotFound):
			return ownerVanished, nil
		case err != nil:
			return ownerUnknown, err
		}
		o, err := maintain.Decode(ctx, x.c, &e)
		switch {
		case errors.Is(err, errs.ErrInvalidInput):
			return ownerUnknown, nil // a row that is not an entity cannot be told to hold it, nor not to
		case err != nil:
			return ownerUnknown, err
		}
		x.c.SetKeys(&o, pk, rk)
		return x.holdsKey(&o, rk, i, k), nil
	}
}

// copyError is a failure about a stored copy: it names the operation, the index ("" for
// a transaction of the entity and its copies) and the entity's primary keys (only the
// partition for an orphan: rk ""), never the copy's RowKey, which holds the indexed value,
// and its text gives only the cause's class ("503 ServerBusy", "key unavailable: ..."), since
// the cause's own text names the copy. The cause stays reachable for errors.Is and
// errors.As.
type copyError struct {
	op, index, pk, rk string
	err               error
}

func (e *copyError) Error() string {
	if e.index == "" {
		return fmt.Sprintf("secondaryindex: %s: the transaction of %s/%s and its copies: %s", e.op, e.pk, e.rk, causeClass(e.err))
	}
	if e.rk == "" {
		return fmt.Sprintf("secondaryindex: %s: an orphan %q copy in partition %s: %s", e.op, e.index, e.pk, causeClass(e.err))
	}
	return fmt.Sprintf("secondaryindex: %s: the %q copy of %s/%s: %s", e.op, e.index, e.pk, e.rk, causeClass(e.err))
}

func (e *copyError) Unwrap() error { return e.err }

// aboutCopy wraps err, a failure about the copy in the index i of the entity (pk, rk),
// as a *copyError (nil stays nil).
func (x *Intra[T]) aboutCopy(err error, op string, i int, pk, rk string) error {
	if err == nil {
		return nil
	}
	return &copyError{op: op, index: x.all[i].Name, pk: pk, rk: rk, err: err}
}

// causeClass is the class of err without any text of its own: the service's status and
// code, the context's error, the encryption failure's fixed reason, or the sentinel.
func causeClass(err error) string {
	var se *errs.ServiceError
	var ae *repo.ActionError
	var ee *codec.EncryptionError
	prefix := ""
	if errors.Is(err, errs.ErrTransient) {
		prefix = "retries exhausted: "
	}
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded.Error()
	case errors.Is(err, errs.ErrOutcomeUnknown):
		return "outcome unknown (re-read and decide)"
	case errors.As(err, &ae):
		return fmt.Sprintf("%stransaction action %d: %d %s", prefix, ae.Index, ae.StatusCode, ae.Code)
	case errors.As(err, &se) && se.StatusCode != 0:
		return fmt.Sprintf("%s%d %s", prefix, se.StatusCode, se.Code)
	case errors.As(err, &ee):
		return "key unavailable: " + ee.Reason
	case errors.Is(err, errs.ErrTransient):
		return "transient failure, retries exhausted"
	}
	for _, s := range []error{errs.ErrNotFound, errs.ErrAlreadyExists, errs.ErrPreconditionFailed, errs.ErrInvalidInput} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "failed (the cause's text is withheld: it names the copy)"
}
