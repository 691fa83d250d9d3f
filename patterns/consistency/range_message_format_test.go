package consistency

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// An archive-range message is a wire format: messages written by an earlier build of the
// worker wait in queues. These texts and ids were produced by the build before the
// selection got its own package; they decode to the same jobs, encode to the same bytes,
// and duplicates keep their message id. No server.
func TestArchiveRangeMessageFormatUnchanged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text, id string
		job      ArchiveRangeJob
	}{
		{
			text: `{"source":"Current","pk":"Sales","rkFrom":"0001","rkTo":"0900","where":[{"property":"N","op":"ge","type":"Edm.Int32","value":"5"},{"property":"Name","op":"eq","value":"x' or 1"}],"targetTable":"Archive","after":{"pk":"Sales","rk":"0005"}}`,
			id:   "range|current|1473f65d8f37e7cc155cb83c",
			job: ArchiveRangeJob{Source: "Current", PartitionKey: "Sales", RowKeyFrom: "0001", RowKeyTo: "0900",
				Where:       []filter.Condition{{Property: "N", Op: "ge", Type: "Edm.Int32", Value: "5"}, {Property: "Name", Op: "eq", Value: "x' or 1"}},
				TargetTable: "Archive", After: &RangeKey{PartitionKey: "Sales", RowKey: "0005"}},
		},
		{
			text: `{"source":"Current","pkFrom":"A","pkTo":"M","targetContainer":"cold"}`,
			id:   "range|current|98f60113eec05f8882fef81e",
			job:  ArchiveRangeJob{Source: "Current", PartitionKeyFrom: "A", PartitionKeyTo: "M", TargetContainer: "cold"},
		},
	} {
		var got ArchiveRangeJob
		if err := json.Unmarshal([]byte(tc.text), &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.job) {
			t.Errorf("decoded %+v, want %+v", got, tc.job)
		}
		b, err := json.Marshal(tc.job)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.text {
			t.Errorf("encoded %s, want %s", b, tc.text)
		}
		if id := tc.job.id(); id != tc.id {
			t.Errorf("message id %s, want %s", id, tc.id)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: %v", tc.text, err)
		}
	}
}
