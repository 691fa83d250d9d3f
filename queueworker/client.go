package queueworker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/retry"
)

// maxVisibility is the service's limit on a visibility timeout or delay: 7 days.
const maxVisibility = 7 * 24 * time.Hour

// ClientOptions configures a Client. The zero value (or nil) means every default.
type ClientOptions struct {
	// Retry is the policy for transient failures of each request. Defaults to
	// retry.Policy{}.WithDefaults().
	Retry retry.Policy
	// Logger receives retry logs. Defaults to zap.NewNop().
	Logger *zap.Logger
}

// Client enqueues typed messages on one queue. It is safe for concurrent use.
type Client struct {
	queue     *azqueue.QueueClient
	queueName string
	retry     retry.Policy
	log       *zap.Logger
}

// NewClient returns a Client that enqueues on q. It does no I/O. The azqueue client should
// have the SDK's own retries disabled (azcore.ClientOptions{Retry: policy.RetryOptions{
// MaxRetries: -1}}), since the Client retries transient failures itself; with them on, one
// failing request becomes up to four per attempt. It returns an *errs.InvalidInputError if
// q is nil or the retry policy is invalid.
func NewClient(q *azqueue.QueueClient, opts *ClientOptions) (*Client, error) {
	if q == nil {
		return nil, errs.Invalid("queue", "is nil")
	}
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	o.Logger = logx.OrNop(o.Logger)
	if o.Retry.Logger == nil {
		o.Retry.Logger = o.Logger
	}
	o.Retry = o.Retry.WithDefaults()
	if err := o.Retry.Validate(); err != nil {
		return nil, err
	}
	return &Client{queue: q, queueName: queueNameOf(q), retry: o.Retry, log: o.Logger}, nil
}

// Queue returns the azqueue client the Client enqueues on.
func (c *Client) Queue() *azqueue.QueueClient { return c.queue }

// EnqueueOptions are the optional parameters of Enqueue. nil means the zero value.
type EnqueueOptions struct {
	// VisibilityDelay keeps the message invisible for this long after it is stored
	// (whole seconds, rounded up; at most 7 days). Defaults to 0: visible at once.
	VisibilityDelay time.Duration
	// TTL is how long the service keeps the message (whole seconds, rounded up).
	// 0 means the service's default, 7 days; -1 means it never expires.
	TTL time.Duration
}

// Enqueued describes a stored message.
type Enqueued struct {
	// ID is the envelope id (the one passed to Enqueue, or the generated one).
	ID string
	// MessageID is the service's id of the stored message.
	MessageID string
	// InsertionTime and ExpirationTime are the service's.
	InsertionTime, ExpirationTime time.Time
}

// Enqueue stores a message of kind with payload on c's queue. id identifies the message to
// handlers (Message.ID) so that they can dedupe; an empty id gets a random 128-bit one.
//
// The envelope {"kind","id","payload","enqueuedAt"} is written base64-encoded, as Azure
// Functions and WebJobs write queue messages, so a Functions app can consume the queue.
//
// Transient failures are retried with c's policy. An enqueue whose response was lost is
// sent again and so may store the message twice: both copies carry the same id, and
// handlers must be idempotent anyway.
//
// Errors: an *errs.InvalidInputError (errors.Is ErrInvalidInput), before any request is
// sent, if kind is empty, payload does not marshal, the encoded message exceeds
// MaxMessageSize, or an option is out of range; an error unwrapping to errs.ErrTransient
// when retries are exhausted; an *errs.ServiceError for other refusals (a missing queue
// unwraps to errs.ErrNotFound).
func Enqueue[T any](ctx context.Context, c *Client, kind, id string, payload T, opts *EnqueueOptions) (Enqueued, error) {
	if kind == "" {
		return Enqueued{}, errs.Invalid("kind", "is empty")
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return Enqueued{}, errs.Invalid("payload", "does not marshal to JSON: %v", err)
	}
	if id == "" {
		id = newID()
	}
	ctx, span := telemetry.Tracer().Start(ctx, "queueworker.enqueue", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(telemetry.KeyQueue.String(c.queueName), telemetry.KeyKind.String(kind)))
	out, err := enqueue(ctx, c, kind, id, raw, opts)
	if out.MessageID != "" {
		// The service's id, not the envelope's: a caller may build that one from keys.
		span.SetAttributes(telemetry.KeyMessageID.String(out.MessageID))
	}
	telemetry.End(span, err)
	return out, err
}

func enqueue(ctx context.Context, c *Client, kind, id string, raw []byte, opts *EnqueueOptions) (Enqueued, error) {
	env := &envelope{Kind: kind, ID: id, Payload: raw, EnqueuedAt: time.Now().UTC(), Trace: telemetry.Inject(ctx)}
	text, err := encodeEnvelope(env, encBase64)
	if err != nil {
		return Enqueued{}, errs.Invalid("payload", "envelope does not marshal: %v", err)
	}
	if checkSize("message", text) != nil && env.Trace != nil {
		// The payload matters more than the trace: a message that fits without its trace
		// context is sent without it, so tracing never shrinks what Enqueue accepts.
		env.Trace = nil
		if text, err = encodeEnvelope(env, encBase64); err != nil {
			return Enqueued{}, errs.Invalid("payload", "envelope does not marshal: %v", err)
		}
	}
	if err := checkSize("message", text); err != nil {
		return Enqueued{}, err
	}
	var o EnqueueOptions
	if opts != nil {
		o = *opts
	}
	qo, err := o.azure()
	if err != nil {
		return Enqueued{}, err
	}
	out, err := c.enqueueText(ctx, "enqueue", text, qo, id)
	out.ID = id
	return out, err
}

// azure converts o to the SDK's options, checking ranges.
func (o EnqueueOptions) azure() (*azqueue.EnqueueMessageOptions, error) {
	qo := &azqueue.EnqueueMessageOptions{}
	switch {
	case o.VisibilityDelay < 0 || o.VisibilityDelay > maxVisibility:
		return nil, errs.Invalid("VisibilityDelay", "%v is outside 0 to 7 days", o.VisibilityDelay)
	case o.VisibilityDelay > 0:
		qo.VisibilityTimeout = seconds(o.VisibilityDelay)
	}
	switch {
	case o.TTL == -1:
		qo.TimeToLive = ptr(int32(-1))
	case o.TTL < 0:
		return nil, errs.Invalid("TTL", "%v is negative (use -1 for no expiry)", o.TTL)
	case o.TTL > 0:
		qo.TimeToLive = seconds(o.TTL)
		if o.VisibilityDelay >= o.TTL {
			return nil, errs.Invalid("VisibilityDelay", "%v is not shorter than TTL %v", o.VisibilityDelay, o.TTL)
		}
	}
	return qo, nil
}

// enqueueText sends text with retries and returns what the service stored.
func (c *Client) enqueueText(ctx context.Context, op, text string, qo *azqueue.EnqueueMessageOptions, id string) (Enqueued, error) {
	var out Enqueued
	err := retry.Do(ctx, c.retry, retry.Op{Name: op, Resource: c.queueName, RowKey: id}, func(ctx context.Context, _ int) error {
		resp, err := c.queue.EnqueueMessage(ctx, text, qo)
		if err != nil {
			return err
		}
		if len(resp.Messages) > 0 && resp.Messages[0] != nil {
			m := resp.Messages[0]
			out.MessageID = deref(m.MessageID)
			out.InsertionTime = derefTime(m.InsertionTime)
			out.ExpirationTime = derefTime(m.ExpirationTime)
		}
		return nil
	})
	return out, errs.Wrap(err, op, c.queueName, "", id)
}

// newID returns 32 random hex digits.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// seconds converts d to whole seconds, rounded up, as the service wants them.
func seconds(d time.Duration) *int32 {
	s := (d + time.Second - 1) / time.Second
	if s > math.MaxInt32 {
		s = math.MaxInt32
	}
	return ptr(int32(s))
}

// queueNameOf returns the queue name of q's URL, for logs and errors.
func queueNameOf(q *azqueue.QueueClient) string {
	parts, err := azqueue.ParseURL(q.URL())
	if err != nil || parts.QueueName == "" {
		return q.URL()
	}
	return parts.QueueName
}

func ptr[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
