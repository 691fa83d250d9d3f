package repo

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// RotateOptions configures RotateKeys. nil means the zero value.
type RotateOptions struct {
	// Filter restricts the rotation to some entities (one partition, a key range). The
	// zero Expr rotates the whole table.
	Filter filter.Expr
	// Token resumes a rotation where an earlier run stopped (RotateResult.Token). It is
	// only valid with the same Filter.
	Token string
	// Pages bounds how many query pages this run processes; 0 processes all of them. A
	// bounded run returns a Token to continue with.
	Pages int
	// PageSize is the most entities per page, at most MaxPageSize (0: MaxPageSize).
	PageSize int
	// OnPage, if set, is called after each page is fully rotated, with the token that
	// resumes after it and the totals so far: persist the token there to resume after a
	// crash. An error it returns stops the run (and is returned).
	OnPage func(token string, progress RotateResult) error
}

// RotateResult reports what a RotateKeys run did.
type RotateResult struct {
	// Rewrapped counts the entities whose content key this run re-wrapped under the new key.
	Rewrapped int
	// Current counts the entities found already under the new key (written after the key
	// changed, or rotated by an earlier run), or deleted before they could be rotated.
	Current int
	// Unencrypted counts the entities without encryption metadata (other entity types of
	// the table): left alone.
	Unencrypted int
	// Token resumes the rotation after the last page completed ("" when the rotation
	// reached the end of the table). On error it resumes at the page that failed.
	Token string
}

// RotateKeys re-wraps the content key of every encrypted entity of the table (or of
// opts.Filter) under Options.Encryption.Key, the key-encryption key to rotate to; the
// Encryption's Resolver must still know the keys being rotated away from. Afterwards the
// old keys can be retired. The encrypted properties are not rewritten: only each entity's
// encryption metadata changes (see codec.Encryption.Rewrap).
//
// It is safe to stop anywhere and to run again, and to run while the application writes:
//
//   - each entity changes in one write, conditional on the ETag it was read with, that
//     swaps its metadata and nothing else: at every moment every entity is readable,
//     under its old key or its new one;
//   - entities already under the new key are skipped, so a rerun (from a saved Token, or
//     from the start) only re-reads what was done;
//   - an entity changed by someone else since it was read (ETag mismatch) is read again
//     and retried; one deleted meanwhile is skipped.
//
// Cost: one query request per page of up to 1,000 entities (selecting only the keys and
// the metadata), then one entity group transaction per run of up to 100 entities of one
// partition within the page (falling back to one request per entity of a transaction that
// met a concurrent change).
//
// Errors: ErrInvalidInput (no Options.Encryption, or no Key; a bad Token or Filter:
// nothing sent); a *codec.EncryptionError for an entity that cannot be rotated (its key
// is unknown to the resolver, the key is wrong, the metadata is tampered): the run stops
// there, that entity and every later one untouched, and the result's Token resumes at the
// failing page once the resolver is fixed; ErrTransient, *Error, ctx errors.
func (t *Table[T]) RotateKeys(ctx context.Context, opts *RotateOptions) (res RotateResult, err error) {
	ctx, span := telemetry.Start(ctx, "repo.rotate_keys", telemetry.KeyTable.String(t.name))
	defer func() {
		span.SetAttributes(attribute.Int("tablepatterns.rewrapped", res.Rewrapped), attribute.Int("tablepatterns.current", res.Current),
			attribute.Bool("tablepatterns.complete", err == nil && res.Token == ""))
		telemetry.End(span, err)
	}()
	return t.rotateKeys(ctx, opts)
}

func (t *Table[T]) rotateKeys(ctx context.Context, opts *RotateOptions) (RotateResult, error) {
	var o RotateOptions
	if opts != nil {
		o = *opts
	}
	x := t.opts.Encryption
	if x == nil || x.Key == nil {
		return RotateResult{}, errs.Invalid("Options.Encryption", "RotateKeys needs an Encryption whose Key is the key to rotate to (and whose Resolver knows the old keys)")
	}
	if o.Pages < 0 {
		return RotateResult{}, errs.Invalid("RotateOptions.Pages", "must not be negative, got %d", o.Pages)
	}
	raw, err := OfType[codec.Entity](t)
	if err != nil {
		return RotateResult{}, err
	}
	res := RotateResult{Token: o.Token}
	pager := raw.Pages(Query{
		Filter:   o.Filter,
		Select:   []string{"PartitionKey", "RowKey", codec.EncryptionMetadataProperty},
		PageSize: o.PageSize,
		Token:    o.Token,
	})
	for pages := 0; pager.More() && (o.Pages == 0 || pages < o.Pages); pages++ {
		page, err := pager.Next(ctx)
		if err != nil {
			return res, err
		}
		if err := rotatePage(ctx, raw, x, page.Items, &res); err != nil {
			return res, err // res.Token still resumes at this page
		}
		res.Token = page.Token
		if o.OnPage != nil {
			if err := o.OnPage(res.Token, res); err != nil {
				return res, err
			}
		}
		if page.Token == "" {
			break
		}
	}
	return res, nil
}

// rotatePage re-wraps the entities of one page and writes them back, one transaction per
// run of entities of one partition.
func rotatePage(ctx context.Context, t *Table[codec.Entity], x *codec.Encryption, items []codec.Entity, res *RotateResult) error {
	var run []*codec.Entity
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		err := writeRewrapped(ctx, t, x, run, res)
		run = run[:0]
		return err
	}
	for i := range items {
		e := &items[i]
		changed, err := x.Rewrap(ctx, e)
		if err != nil {
			if ferr := flush(); ferr != nil {
				return ferr
			}
			return err
		}
		if !changed {
			if _, ok := e.Properties[codec.EncryptionMetadataProperty]; ok {
				res.Current++
			} else {
				res.Unencrypted++
			}
			continue
		}
		if len(run) > 0 && (run[0].PartitionKey != e.PartitionKey || len(run) == MaxTransactionActions) {
			if err := flush(); err != nil {
				return err
			}
		}
		run = append(run, e)
	}
	return flush()
}

// writeRewrapped writes the new metadata of entities of one partition: a transaction of
// merges conditional on each entity's ETag, or, when one of them changed meanwhile, each
// entity on its own.
func writeRewrapped(ctx context.Context, t *Table[codec.Entity], x *codec.Encryption, run []*codec.Entity, res *RotateResult) error {
	actions := make([]Action, len(run))
	for i, e := range run {
		actions[i] = t.UpdateAction(e, metadataOnly)
	}
	_, err := Submit(ctx, actions...)
	if err == nil {
		res.Rewrapped += len(run)
		return nil
	}
	var ae *ActionError
	if !errors.As(err, &ae) || !(errors.Is(err, ErrPreconditionFailed) || errors.Is(err, ErrNotFound)) {
		return err
	}
	for _, e := range run {
		rewrapped, err := rotateOne(ctx, t, x, e.PartitionKey, e.RowKey)
		if err != nil {
			return err
		}
		if rewrapped {
			res.Rewrapped++
		} else {
			res.Current++ // deleted meanwhile, or rewritten under the new key
		}
	}
	return nil
}

// metadataOnly writes the encryption metadata and nothing else, conditional on the ETag.
var metadataOnly = &UpdateOptions{Mode: Merge, Properties: []string{codec.EncryptionMetadataProperty}}

// rotateOne re-reads one entity and re-wraps it, retrying while other writers change it.
// It reports whether it wrote.
func rotateOne(ctx context.Context, t *Table[codec.Entity], x *codec.Encryption, pk, rk string) (bool, error) {
	op := t.op("rotate key", pk, rk)
	op.Retryable = func(err error) bool { return errors.Is(err, ErrPreconditionFailed) || retry.IsTransient(err) }
	wrote := false
	err := retry.Do(ctx, t.opts.Retry, op, func(ctx context.Context, _ int) error {
		wrote = false
		e, err := t.Get(ctx, pk, rk)
		if errors.Is(err, ErrNotFound) {
			return nil // deleted meanwhile: nothing to rotate
		}
		if err != nil {
			return err
		}
		changed, err := x.Rewrap(ctx, &e)
		if err != nil || !changed {
			return err
		}
		err = t.Update(ctx, &e, metadataOnly)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		wrote = err == nil
		return err
	})
	return wrote, err
}
