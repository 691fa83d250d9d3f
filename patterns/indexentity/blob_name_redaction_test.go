package indexentity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// An index blob's name holds the value (BlobStore): a request to it that ends without an
// answer (the caller's context ends while it is in flight) fails with an error whose text
// names the container, never the blob, although the transport's own error prints the
// request's URL, path and all.
func TestBlobStoreErrorNeverCarriesTheBlobName(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := b.blobStore()
	held := b.Proxies.Blob.PauseAt("held", faultproxy.MethodIs("GET"), 1)
	t.Cleanup(held.Release)
	ctx, cancel := context.WithCancel(b.Ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Add(ctx, "Secretvalue", Key{"Sales", "000001"}) }()
	if err := held.Wait(b.Ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Add whose context ended: %v; want context.Canceled", err)
	}
	if s := fmt.Sprintf("%v %+v", err, err); strings.Contains(s, "Secretvalue") {
		t.Errorf("the error carries the blob's name: %s", s)
	}
}
