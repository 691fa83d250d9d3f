package indexentity

import (
	"bytes"
	"io"
	"net/http"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// batchFor selects the transactions that write the entity of RowKey rk.
func batchFor(rk string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		if !faultproxy.IsBatch(r) {
			return false
		}
		body, _ := io.ReadAll(r.Body)
		return bytes.Contains(body, []byte("RowKey='"+rk+"'"))
	}
}
