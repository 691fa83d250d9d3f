package queueworker

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// maxPoisonError bounds the error text kept in a poison message (a panic's stack can be
// long; the message must stay under 64 KiB).
const maxPoisonError = 8 << 10

// poisonRecord is the JSON document of a poison message: the original envelope (or, if it
// was not one, the original text) with why and where it failed.
type poisonRecord struct {
	Error        string    `json:"error"`
	Queue        string    `json:"queue"`
	MessageID    string    `json:"messageId"`
	DequeueCount int64     `json:"dequeueCount"`
	PoisonedAt   time.Time `json:"poisonedAt"`
	Message      *envelope `json:"message,omitempty"`
	Text         *string   `json:"text,omitempty"`
}

// poisonText builds the poison message for an original message, base64-encoded like every
// message we write. If that does not fit in 64 KiB (an original near the limit), it falls
// back to the original text unchanged, as WebJobs copies it; the error is then only in the
// worker's log.
func poisonText(queue, messageID, original string, env *envelope, count int64, cause error) string {
	rec := poisonRecord{Queue: queue, MessageID: messageID, DequeueCount: count, PoisonedAt: time.Now().UTC()}
	if cause != nil {
		rec.Error = errs.Redact(cause)
		if len(rec.Error) > maxPoisonError {
			rec.Error = rec.Error[:maxPoisonError] + "…(truncated)"
		}
	}
	if env != nil {
		e := *env
		rec.Message = &e
	} else {
		rec.Text = &original
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return original
	}
	text := encodeText(raw, encBase64)
	if len(text) > MaxMessageSize {
		return original
	}
	return text
}

// PoisonMessage is a message of a poison queue as PeekPoison shows it.
type PoisonMessage struct {
	// MessageID, InsertionTime and DequeueCount are the poison queue's own.
	MessageID     string
	InsertionTime time.Time
	DequeueCount  int64
	// Error, Queue, OriginalMessageID, OriginalDequeueCount and PoisonedAt come from the
	// worker's record; they are empty for a message copied as-is (by WebJobs, or by the
	// worker when the record would not fit in 64 KiB).
	Error                string
	Queue                string
	OriginalMessageID    string
	OriginalDequeueCount int64
	PoisonedAt           time.Time
	// Kind, ID and Payload are the original envelope's, when it was one.
	Kind    string
	ID      string
	Payload json.RawMessage
	// Original is the text RequeuePoison would enqueue on the main queue.
	Original string
}

// PeekPoison returns up to n (1 to 32; 0 means 32) messages at the head of a poison queue
// without locking them, for operators. Transient failures are retried with the default
// retry policy. Errors: an *errs.InvalidInputError for n out of range or a nil queue; an
// *errs.ServiceError (errors.Is errs.ErrNotFound when the queue does not exist) or an error
// unwrapping to errs.ErrTransient.
func PeekPoison(ctx context.Context, poison *azqueue.QueueClient, n int) ([]PoisonMessage, error) {
	if poison == nil {
		return nil, errs.Invalid("poison queue", "is nil")
	}
	if n == 0 {
		n = MaxBatchSize
	}
	if n < 1 || n > MaxBatchSize {
		return nil, errs.Invalid("n", "%d is outside 1 to %d", n, MaxBatchSize)
	}
	name := queueNameOf(poison)
	var peeked []*azqueue.PeekedMessage
	err := retry.Do(ctx, retry.Policy{}, retry.Op{Name: "peek poison", Resource: name}, func(ctx context.Context, _ int) error {
		resp, err := poison.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: ptr(int32(n))})
		if err != nil {
			return err
		}
		peeked = resp.Messages
		return nil
	})
	if err != nil {
		return nil, errs.Wrap(err, "peek poison", name, "", "")
	}
	out := make([]PoisonMessage, 0, len(peeked))
	for _, m := range peeked {
		if m == nil {
			continue
		}
		pm := parsePoison(deref(m.MessageText))
		pm.MessageID = deref(m.MessageID)
		pm.InsertionTime = derefTime(m.InsertionTime)
		pm.DequeueCount = deref64(m.DequeueCount)
		out = append(out, pm)
	}
	return out, nil
}

// parsePoison reads a poison message text: the worker's record, or anything else as-is.
func parsePoison(text string) PoisonMessage {
	pm := PoisonMessage{Original: text}
	raw, _, err := decodeJSONText(text)
	if err != nil {
		return pm
	}
	var rec poisonRecord
	if json.Unmarshal(raw, &rec) != nil || (rec.Message == nil && rec.Text == nil) {
		// Not a record: maybe an envelope copied as-is (a record too large for the poison
		// queue falls back to the original text). A requeued message starts afresh: its
		// uncounted deliveries are reset, or they would contradict the new queue's dequeue
		// count and poison it again at once.
		if env, enc, err := decodeEnvelope(text); err == nil {
			pm.Kind, pm.ID, pm.Payload = env.Kind, env.ID, env.Payload
			if env.Uncounted != 0 {
				env.Uncounted = 0
				if b, err := json.Marshal(env); err == nil {
					pm.Original = encodeText(b, enc)
				}
			}
		}
		return pm
	}
	pm.Error, pm.Queue, pm.OriginalMessageID = rec.Error, rec.Queue, rec.MessageID
	pm.OriginalDequeueCount, pm.PoisonedAt = rec.DequeueCount, rec.PoisonedAt
	if rec.Text != nil {
		pm.Original = *rec.Text
		return pm
	}
	env := *rec.Message
	pm.Kind, pm.ID, pm.Payload = env.Kind, env.ID, env.Payload
	env.Uncounted = 0 // a requeued message starts afresh
	if b, err := json.Marshal(&env); err == nil {
		pm.Original = encodeText(b, encBase64)
		if len(pm.Original) > MaxMessageSize {
			pm.Original = string(b) // raw JSON is 3/4 the size and still readable
		}
	}
	return pm
}

// RequeuePoison moves up to limit messages (0 means all) from poison back to c's queue,
// but never more than the poison queue held when it started: it reads the queue's
// approximate message count and the service's time first, handles at most that many
// messages, and leaves alone the messages inserted after it started (they stay locked
// for a minute, then are visible again). So it ends even while a worker poisons the
// requeued messages again. For each message it enqueues the original envelope (with its
// id, so handlers' dedupe still works) and then deletes the poison message. A crash or
// lost response between the two can enqueue a message twice, which idempotent handlers
// absorb; a message is never deleted from the poison queue before its copy is stored.
// Each poison message is locked for a minute while it moves. It returns how many were
// moved, and the first error that stopped it: an *errs.InvalidInputError for bad
// arguments, or a wrapped service error (errors.Is errs.ErrNotFound when a queue does
// not exist, errs.ErrTransient after exhausted retries).
func RequeuePoison(ctx context.Context, poison *azqueue.QueueClient, c *Client, limit int) (int, error) {
	switch {
	case poison == nil:
		return 0, errs.Invalid("poison queue", "is nil")
	case c == nil:
		return 0, errs.Invalid("client", "is nil")
	case limit < 0:
		return 0, errs.Invalid("limit", "%d is negative", limit)
	}
	name := queueNameOf(poison)
	var present int
	var started time.Time
	err := retry.Do(ctx, c.retry, retry.Op{Name: "poison queue properties", Resource: name}, func(ctx context.Context, _ int) error {
		resp, err := poison.GetProperties(ctx, nil)
		if err != nil {
			return err
		}
		present = int(deref32(resp.ApproximateMessagesCount))
		started = time.Now()
		if resp.Date != nil {
			started = *resp.Date // the service's clock, as InsertionTime is
		}
		return nil
	})
	if err != nil {
		return 0, errs.Wrap(err, "poison queue properties", name, "", "")
	}
	if limit == 0 || limit > present {
		limit = present
	}
	moved, seen := 0, 0
	for seen < limit {
		n := min(MaxBatchSize, limit-seen)
		var msgs []*azqueue.DequeuedMessage
		err := retry.Do(ctx, c.retry, retry.Op{Name: "dequeue poison", Resource: name}, func(ctx context.Context, _ int) error {
			resp, err := poison.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: ptr(int32(n)), VisibilityTimeout: ptr(int32(60))})
			if err != nil {
				return err
			}
			msgs = resp.Messages
			return nil
		})
		if err != nil {
			return moved, errs.Wrap(err, "dequeue poison", name, "", "")
		}
		old := 0
		for _, m := range msgs {
			if m == nil || m.MessageID == nil || m.PopReceipt == nil {
				continue
			}
			if m.InsertionTime != nil && m.InsertionTime.After(started) {
				continue // poisoned after we started (maybe one we requeued): not ours
			}
			old++
			seen++
			pm := parsePoison(deref(m.MessageText))
			if _, err := c.enqueueText(ctx, "requeue", pm.Original, nil, pm.ID); err != nil {
				return moved, err
			}
			err := retry.Do(ctx, c.retry, retry.Op{Name: "delete poison", Resource: name, RowKey: *m.MessageID}, func(ctx context.Context, _ int) error {
				_, err := poison.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil)
				if isResponse(err, http.StatusNotFound, "") {
					return nil // an earlier attempt's response was lost
				}
				return err
			})
			if err != nil {
				return moved, errs.Wrap(err, "delete poison", name, "", *m.MessageID)
			}
			moved++
		}
		if old == 0 {
			return moved, nil // nothing left that was there when we started
		}
	}
	return moved, nil
}

func deref32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
