package repo_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
)

// A transaction refused before it is sent names its actions by index: an action's keys
// may be an index copy's (its RowKey, or an index entity's PartitionKey, holds the indexed
// value), and a refusal's text travels into logs and poison records (an archive job whose
// companions' actions cannot commit together).
func TestTransactionRefusalNeverCarriesIndexCopyKey(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	tbl := table[Counter](t, b, nil)
	entity := tbl.DeleteAction("Sales", "emp_1", nil)
	for name, actions := range map[string][]repo.Action{
		"one row twice":      {entity, tbl.DeleteAction("Sales", "email_jonesj@contoso.com", nil), tbl.DeleteAction("Sales", "email_jonesj@contoso.com", nil)},
		"another partition":  {entity, tbl.DeleteAction("idx!email!jonesj@contoso.com", "1", nil)},
		"a bad copy key":     {entity, tbl.DeleteAction("Sales", "email_jonesj@contoso.com/x", nil)},
		"another partition0": {tbl.DeleteAction("idx!email!jonesj@contoso.com", "1", nil), entity},
	} {
		t.Run(name, func(t *testing.T) {
			err := repo.CheckTransaction(actions...)
			if !errors.Is(err, repo.ErrInvalidInput) {
				t.Fatalf("CheckTransaction: %v; want ErrInvalidInput", err)
			}
			_, serr := repo.Submit(b.ctx, actions...)
			if !errors.Is(serr, repo.ErrInvalidInput) {
				t.Fatalf("Submit: %v; want ErrInvalidInput", serr)
			}
			for _, e := range []error{err, serr} {
				if s := fmt.Sprintf("%v %+v", e, e); strings.Contains(s, "jonesj") {
					t.Errorf("the refusal carries the copy's key: %s", s)
				}
			}
		})
	}
}
