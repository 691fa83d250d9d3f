package repo

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// azuriteAnswers submits a committed and a refused transaction to Azurite and returns the
// raw $batch answers, as seeds.
func azuriteAnswers(f *testing.F) (contentTypes []string, bodies [][]byte) {
	f.Helper()
	ctx := context.Background()
	svc, err := aztables.NewServiceClientFromConnectionString(testenv.ConnectionString(f), TableClientOptions(nil))
	if err != nil {
		f.Fatal(err)
	}
	name := testenv.TableName(f)
	if _, err := svc.CreateTable(ctx, name, nil); err != nil {
		f.Fatal(err)
	}
	defer func() { _, _ = svc.DeleteTable(ctx, name, nil) }()
	client := svc.NewClient(name)
	body := []byte(`{"PartitionKey":"p","RowKey":"r","N":1}`)
	for range 2 { // committed, then refused (the entity exists)
		ex := &batchExchange{actions: []wireAction{{method: "POST", table: name, pk: "p", rk: "r", body: body}}}
		_, _ = client.SubmitTransaction(withBatchExchange(ctx, ex), []aztables.TransactionAction{{ActionType: aztables.TransactionTypeAdd, Entity: body}}, nil)
		if !ex.applied {
			f.Fatal("the batch policy did not see the answer")
		}
		contentTypes = append(contentTypes, ex.contentType)
		bodies = append(bodies, ex.response)
	}
	return contentTypes, bodies
}

// FuzzBatchResponse: any bytes as a $batch answer give an error or sub-responses, never a
// panic; and a body checkBatchBody lets through to aztables can be read the way aztables
// reads it (its boundary slicing is the part that panicked).
func FuzzBatchResponse(f *testing.F) {
	cts, bodies := azuriteAnswers(f)
	for i := range bodies {
		f.Add(cts[i], bodies[i])
		f.Add(cts[i], bodies[i][:len(bodies[i])/2])
	}
	f.Add("", []byte(""))
	f.Add("multipart/mixed; boundary=x", []byte("--x\r\n"))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		_, _ = parseBatchResponse(contentType, body)
		if checkBatchBody(body) != nil || (len(body) > 0 && body[0] == '{') {
			return
		}
		// What aztables' buildTransactionResponse does, with the slicing it does.
		outer := aztablesBoundary(body)
		p, err := multipart.NewReader(bytes.NewReader(body), outer).NextPart()
		if err != nil {
			return
		}
		inner, _ := io.ReadAll(p)
		_ = aztablesBoundary(inner)
	})
}

// aztablesBoundary is aztables v1.4.1's getBoundaryName, unchanged: it panics on a body
// without a line of at least two bytes.
func aztablesBoundary(b []byte) string {
	end := bytes.Index(b, []byte("\n"))
	if end > 0 && b[end-1] == '\r' {
		end--
	}
	return string(b[2:end])
}
