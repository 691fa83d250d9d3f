package secondaryindex

import (
	"context"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
)

// tracedWrite runs write, the three steps of an Inter write, under the span
// "secondaryindex.write", which names the primary table and the message kind.
func (x *Inter[T]) tracedWrite(ctx context.Context, pk, rk string, do func(context.Context) error) (err error) {
	ctx, span := telemetry.Start(ctx, "secondaryindex.write", telemetry.KeyTable.String(x.primary.Name()), telemetry.KeyKind.String(x.opts.Kind))
	defer func() { telemetry.End(span, err) }()
	return x.write(ctx, pk, rk, do)
}

// reconcileSpan starts the span "secondaryindex.reconcile" of a reconciliation, which
// names the primary table and the number of indexes; end ends it with the
// reconciliation's error.
func (x *Inter[T]) reconcileSpan(ctx context.Context) (_ context.Context, end func(error)) {
	ctx, span := telemetry.Start(ctx, "secondaryindex.reconcile", telemetry.KeyTable.String(x.primary.Name()), telemetry.KeyCount.Int(len(x.idx)))
	return ctx, func(err error) { telemetry.End(span, err) }
}
