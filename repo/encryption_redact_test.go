package repo_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

type wideLevel struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	Level      int64  `table:"Level,encrypt"`
}

type narrowLevel struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	Level      int16  `table:"Level,encrypt"`
}

// Through the service: a decrypted value that overflows
// its field is not in the error a read returns, whichever way it is read.
func TestDecryptedValueNotInReadErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := &codec.Encryption{Key: newKEK(t, "kek-1")}
	wide := table[wideLevel](t, b, &repo.Options{Encryption: x})
	if err := wide.Insert(b.ctx, &wideLevel{Department: "Sales", EmployeeID: "000123", Level: 987654321}); err != nil {
		t.Fatal(err)
	}
	narrow := table[narrowLevel](t, b, &repo.Options{Encryption: x})
	_, getErr := narrow.Get(b.ctx, "Sales", "000123")
	_, queryErr := narrow.Collect(b.ctx, repo.Query{})
	for what, err := range map[string]error{"get": getErr, "query": queryErr} {
		var de *codec.DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("%s: %v, want a *codec.DecodeError", what, err)
		}
		if text := fmt.Sprintf("%v %+v %#v", err, err, err); strings.Contains(text, "987654321") {
			t.Errorf("%s: the error text carries the decrypted value: %s", what, text)
		}
	}
}
