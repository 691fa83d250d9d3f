package queueworker

import (
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/logx"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Defaults, those of the Azure Functions/WebJobs queue trigger where it has one.
const (
	// DefaultBatchSize is the default number of messages fetched per dequeue.
	DefaultBatchSize = 16
	// MaxBatchSize is the service's limit on messages per dequeue.
	MaxBatchSize = 32
	// DefaultVisibilityTimeout is the default message lock, renewed at half while a handler runs.
	DefaultVisibilityTimeout = 10 * time.Minute
	// DefaultMaxDequeueCount is the default number of deliveries before a failing message
	// goes to the poison queue.
	DefaultMaxDequeueCount = 5
	// DefaultMinPollInterval is the first wait after an empty dequeue.
	DefaultMinPollInterval = 100 * time.Millisecond
	// DefaultMaxPollInterval is the longest wait between dequeues of an empty queue.
	DefaultMaxPollInterval = time.Minute
	// DefaultMaxRetryDelay caps the backoff of failed messages when RetryDelay is set.
	DefaultMaxRetryDelay = 10 * time.Minute
	// DefaultShutdownTimeout is how long Stop lets in-flight handlers finish.
	DefaultShutdownTimeout = 30 * time.Second
	// PoisonSuffix is appended to a queue's name to name its poison queue.
	PoisonSuffix = "-poison"
)

// Config configures a Worker. Zero values mean the documented default; -1 turns off what
// can be turned off. New fills the defaults and validates the result; the Worker keeps its
// own copy.
type Config struct {
	// Queue is the queue to consume. Required. The SDK's own retries should be off on it
	// (azcore's Retry.MaxRetries = -1): the worker retries transient failures itself.
	Queue *azqueue.QueueClient
	// PoisonQueue receives messages that failed MaxDequeueCount times or were cancelled.
	// It is created on first use if missing. Defaults to Service's queue named
	// "<queue>-poison"; one of PoisonQueue and Service is required.
	PoisonQueue *azqueue.QueueClient
	// Service derives PoisonQueue when it is nil. azqueue cannot derive a sibling queue
	// client from a QueueClient, hence this field.
	Service *azqueue.ServiceClient
	// Registry holds the handlers. Required; the worker copies it at New.
	Registry *Registry

	// BatchSize is the number of messages asked for per dequeue, 1 to 32. Defaults to 16.
	// A new batch is fetched when at least half of min(BatchSize, Concurrency) handler slots
	// are free, and never more messages than free slots, so that no dequeued message waits
	// for a slot while its lock runs.
	BatchSize int
	// Concurrency bounds the handlers running at once. Defaults to BatchSize.
	Concurrency int
	// VisibilityTimeout is the lock taken on each dequeued message (whole seconds, 1 s to
	// 7 days), renewed every half of it while the handler runs. Defaults to 10 minutes.
	VisibilityTimeout time.Duration
	// MaxDequeueCount is the number of deliveries (snoozes not counted) after which a failing
	// message is moved to the poison queue. Defaults to 5.
	MaxDequeueCount int
	// RetryDelay is the base of the backoff with which a failed message is released: it
	// becomes visible again after min(RetryDelay*Rand(0.8,1.2)*(2^n-1), MaxRetryDelay), n
	// being its delivery count. Defaults to 0: released at once, as Azure Functions does
	// (visibilityTimeout 0). -1: not released; the message reappears when its lock expires.
	RetryDelay time.Duration
	// MaxRetryDelay caps RetryDelay's backoff. Defaults to 10 minutes.
	MaxRetryDelay time.Duration
	// MinPollInterval is the first wait after an empty dequeue; later ones grow
	// exponentially with ±20 % jitter up to MaxPollInterval, and a message resets them.
	// Defaults to 100 ms.
	MinPollInterval time.Duration
	// MaxPollInterval caps the empty-queue polling interval. Defaults to 1 minute.
	MaxPollInterval time.Duration
	// ShutdownTimeout is how long Stop (and the end of Start's context) lets in-flight
	// handlers finish before cancelling their contexts. Defaults to 30 s; -1 waits without
	// limit (Stop's own context still bounds it).
	ShutdownTimeout time.Duration
	// Retry is the policy for transient failures of each queue request. Defaults to
	// retry.Policy{}.WithDefaults(); its Logger defaults to Logger.
	Retry retry.Policy
	// Logger receives structured logs. Defaults to zap.NewNop().
	Logger *zap.Logger
}

// withDefaults returns c with every zero value replaced by its default.
func (c Config) withDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Concurrency == 0 {
		c.Concurrency = c.BatchSize
	}
	if c.VisibilityTimeout == 0 {
		c.VisibilityTimeout = DefaultVisibilityTimeout
	}
	if c.MaxDequeueCount == 0 {
		c.MaxDequeueCount = DefaultMaxDequeueCount
	}
	if c.MaxRetryDelay == 0 {
		c.MaxRetryDelay = DefaultMaxRetryDelay
	}
	if c.MinPollInterval == 0 {
		c.MinPollInterval = DefaultMinPollInterval
	}
	if c.MaxPollInterval == 0 {
		c.MaxPollInterval = DefaultMaxPollInterval
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	c.Logger = logx.OrNop(c.Logger)
	if c.Retry.Logger == nil {
		c.Retry.Logger = c.Logger
	}
	c.Retry = c.Retry.WithDefaults()
	if c.PoisonQueue == nil && c.Service != nil && c.Queue != nil {
		c.PoisonQueue = c.Service.NewQueueClient(queueNameOf(c.Queue) + PoisonSuffix)
	}
	return c
}

// validate checks a Config that went through withDefaults.
func (c Config) validate() error {
	switch {
	case c.Queue == nil:
		return errs.Invalid("Queue", "is nil")
	case c.PoisonQueue == nil:
		return errs.Invalid("PoisonQueue", "is nil and there is no Service to derive it from")
	case c.Registry == nil || len(c.Registry.handlers) == 0:
		return errs.Invalid("Registry", "has no handler")
	case c.BatchSize < 1 || c.BatchSize > MaxBatchSize:
		return errs.Invalid("BatchSize", "%d is outside 1 to %d", c.BatchSize, MaxBatchSize)
	case c.Concurrency < 1:
		return errs.Invalid("Concurrency", "%d is below 1", c.Concurrency)
	case c.VisibilityTimeout < time.Second || c.VisibilityTimeout > maxVisibility:
		return errs.Invalid("VisibilityTimeout", "%v is outside 1 s to 7 days", c.VisibilityTimeout)
	case c.MaxDequeueCount < 1:
		return errs.Invalid("MaxDequeueCount", "%d is below 1", c.MaxDequeueCount)
	case c.RetryDelay < -1 || c.RetryDelay > maxVisibility:
		return errs.Invalid("RetryDelay", "%v is outside 0 to 7 days (or -1)", c.RetryDelay)
	case c.MaxRetryDelay < 0 || c.MaxRetryDelay > maxVisibility:
		return errs.Invalid("MaxRetryDelay", "%v is outside 0 to 7 days", c.MaxRetryDelay)
	case c.MinPollInterval < 0:
		return errs.Invalid("MinPollInterval", "%v is negative", c.MinPollInterval)
	case c.MaxPollInterval < c.MinPollInterval:
		return errs.Invalid("MaxPollInterval", "%v is below MinPollInterval %v", c.MaxPollInterval, c.MinPollInterval)
	case c.ShutdownTimeout < -1:
		return errs.Invalid("ShutdownTimeout", "%v is negative (use -1 for no limit)", c.ShutdownTimeout)
	}
	return c.Retry.Validate()
}
