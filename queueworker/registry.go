package queueworker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Message is one delivery of a queue message to a handler.
type Message[T any] struct {
	// ID is the envelope's id: chosen (or generated) at Enqueue and the same on every
	// delivery, on a duplicate enqueued after a lost response, and after a requeue from the
	// poison queue. Handlers dedupe on it.
	ID string
	// Kind is the envelope's kind, the key the handler was registered under.
	Kind string
	// Payload is the envelope's payload decoded into T.
	Payload T
	// EnqueuedAt is the time Enqueue built the envelope (the client's clock).
	EnqueuedAt time.Time
	// MessageID is the queue service's id of this copy of the message.
	MessageID string
	// DequeueCount is the service's count of deliveries of this copy, this one included
	// (uncounted deliveries included).
	DequeueCount int64
	// Uncounted is how many earlier deliveries do not count towards MaxDequeueCount
	// (they ended in Snooze or were interrupted by a shutdown).
	Uncounted int64
	// InsertionTime is when the service stored this copy (the service's clock).
	InsertionTime time.Time
}

// HandlerFunc handles one message of type T. Return nil when the work is done (the message
// is then deleted), Snooze or Cancel to steer the worker, or any other error to have the
// message delivered again (see Config.RetryDelay) until MaxDequeueCount. A handler must be
// idempotent: a message can be delivered more than once (a lost response, a lost lock, a
// crash between the work and the delete). ctx is cancelled when the worker stops and the
// shutdown grace period (Config.ShutdownTimeout) is over.
type HandlerFunc[T any] func(ctx context.Context, msg *Message[T]) error

// delivery is the untyped part of a message the worker hands to a registered handler.
type delivery struct {
	env           *envelope
	messageID     string
	dequeueCount  int64
	insertionTime time.Time
}

// handler is a registered HandlerFunc with its payload decoding bound in.
type handler func(ctx context.Context, d *delivery) error

// Registry maps message kinds to handlers. Fill it with Handle before passing it to New;
// the worker copies it, so later registrations do not affect a built worker. A Registry is
// not safe for concurrent registration.
type Registry struct {
	handlers map[string]handler
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{handlers: map[string]handler{}} }

// Handle registers fn for messages of kind. Payloads are decoded with encoding/json into a
// new T; one that does not decode is a permanent failure (the message is poisoned at once,
// as with Cancel). It returns an *errs.InvalidInputError (errors.Is ErrInvalidInput) if kind
// is empty, fn is nil or kind is already registered.
func Handle[T any](r *Registry, kind string, fn HandlerFunc[T]) error {
	switch {
	case r == nil:
		return errs.Invalid("registry", "is nil")
	case kind == "":
		return errs.Invalid("kind", "is empty")
	case fn == nil:
		return errs.Invalid("handler", "is nil for kind %q", kind)
	}
	if r.handlers == nil {
		r.handlers = map[string]handler{}
	}
	if _, dup := r.handlers[kind]; dup {
		return errs.Invalid("kind", "%q is already registered", kind)
	}
	r.handlers[kind] = func(ctx context.Context, d *delivery) error {
		msg := &Message[T]{
			ID:            d.env.ID,
			Kind:          d.env.Kind,
			EnqueuedAt:    d.env.EnqueuedAt,
			MessageID:     d.messageID,
			DequeueCount:  d.dequeueCount,
			Uncounted:     d.env.Uncounted,
			InsertionTime: d.insertionTime,
		}
		if len(d.env.Payload) > 0 {
			if err := json.Unmarshal(d.env.Payload, &msg.Payload); err != nil {
				return Cancel(fmt.Errorf("queueworker: payload of kind %q does not decode into %T: %w", d.env.Kind, msg.Payload, err))
			}
		}
		return fn(ctx, msg)
	}
	return nil
}

// MustHandle is Handle that panics on error, for registrations at program start.
func MustHandle[T any](r *Registry, kind string, fn HandlerFunc[T]) {
	if err := Handle(r, kind, fn); err != nil {
		panic(err)
	}
}
