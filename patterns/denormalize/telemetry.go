package denormalize

import (
	"context"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
)

// span starts the span of one operation of the relation on table; end closes it with the
// operation's error.
func (r *Relation[S, D]) span(ctx context.Context, name, table string) (_ context.Context, end func(error)) {
	ctx, span := telemetry.Start(ctx, name, telemetry.KeyTable.String(table), attribute.String("tablepatterns.relation", r.name))
	return ctx, func(err error) { telemetry.End(span, err) }
}
