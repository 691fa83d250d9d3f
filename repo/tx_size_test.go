package repo_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// TransactionSize is the measure Submit refuses by: a caller that cuts actions into
// transactions by it never builds one that Submit refuses for its size, and the measure
// counts the path-escaped keys of an update's request line, not only its body. No
// server: a transaction under the limit fails to connect, one at the limit is refused
// before that.
func TestTransactionSizeIsSubmitsMeasure(t *testing.T) {
	t.Parallel()
	// No SDK retries either: the refused connection answers at once, not after azcore's
	// backoff.
	svc, err := aztables.NewServiceClientWithNoCredential("http://127.0.0.1:1/devstoreaccount1",
		&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := repo.New[codec.Entity](svc, "Sizes", &repo.Options{Retry: retry.Policy{MaxRetries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	heavy := strings.Repeat("'€", 250) // path-escaped with quotes doubled: 4,500 bytes
	escaped := len(url.PathEscape(strings.ReplaceAll(heavy, "'", "''")))
	fill := strings.Repeat("z", 20000)
	entity := func(i int) *codec.Entity {
		return &codec.Entity{PartitionKey: heavy, RowKey: fmt.Sprintf("%s%03d", heavy, i), ETag: `W/"datetime'2026-01-01T00%3A00%3A00Z'"`,
			Properties: map[string]any{"A": fill, "B": fill}}
	}
	ins, upd := tbl.InsertAction(entity(0)), tbl.UpdateAction(entity(0), nil)
	if d := upd.Size() - ins.Size(); d < 2*escaped {
		t.Fatalf("an update measures %d bytes more than an insert of the same entity, want at least its two escaped keys (%d)", d, 2*escaped)
	}
	if got, want := repo.TransactionSize(ins, upd), repo.TransactionSize()+ins.Size()+upd.Size(); got != want {
		t.Fatalf("TransactionSize %d, want the framing and the actions' sizes %d", got, want)
	}
	// Summed as it grows (TransactionSize is the framing plus the actions' sizes, checked
	// above): measuring the whole list again for each action marshals it again.
	var actions []repo.Action
	for i, size := 0, repo.TransactionSize(); size < repo.MaxTransactionBytes; i++ {
		a := tbl.UpdateAction(entity(i), nil)
		actions = append(actions, a)
		size += a.Size()
	}
	if len(actions) > repo.MaxTransactionActions {
		t.Fatalf("%d actions: the entities are too small for this test", len(actions))
	}
	var ie *repo.InvalidInputError
	if _, err := repo.Submit(t.Context(), actions...); !errors.As(err, &ie) || ie.Field != "transaction" {
		t.Fatalf("%d actions measured at %d: got %v, want refused for its size", len(actions), repo.TransactionSize(actions...), err)
	}
	fits := actions[:len(actions)-1]
	if _, err := repo.Submit(t.Context(), fits...); err == nil || errors.As(err, &ie) {
		t.Fatalf("%d actions measured at %d: got %v, want sent (and failing to connect)", len(fits), repo.TransactionSize(fits...), err)
	}
}
