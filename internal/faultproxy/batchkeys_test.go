package faultproxy

import (
	"slices"
	"testing"
)

// A transaction of deletes whose sub-requests end with their last header line (no
// blank line before the boundary, as repo's batch writer sends them and the service
// takes them) is charged to the deletes' partitions, one entity each, not to an unknown
// partition as one.
func TestBatchKeysOfBodylessDeletes(t *testing.T) {
	del := func(rk string) string {
		return "--changeset_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
			"DELETE http://127.0.0.1/devstoreaccount1/t1(PartitionKey='p1',RowKey='" + rk + "') HTTP/1.1\r\n" +
			"Accept: application/json;odata=minimalmetadata\r\nIf-Match: *\r\n"
	}
	body := "--batch_1\r\nContent-Type: multipart/mixed; boundary=changeset_1\r\n\r\n" +
		del("1") + "\r\n" + del("2") + "\r\n--changeset_1--\r\n\r\n--batch_1--\r\n"
	got := batchPartitionKeys("multipart/mixed; boundary=batch_1", []byte(body))
	if want := []string{"p1", "p1"}; !slices.Equal(got, want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
}
