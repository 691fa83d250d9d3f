package largeentity_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The Store logs through its table's logger (the logger of every pattern comes from the
// table): an orphan left by a crashed update is reported there when the sweeper deletes it.
func TestLogsThroughTheTableLogger(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	core, logs := observer.New(zap.InfoLevel)
	table := testbed.NewTable[Employee](b.Bed, &repo.Options{Logger: zap.New(core)})
	s, err := largeentity.New(table, b.Clients.Blobs, b.cname, &largeentity.Options{Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	b.store = s
	if err := s.Insert(b.ctx, employee("000123", photo(1, 40<<10))); err != nil {
		t.Fatal(err)
	}
	e, err := s.Get(b.ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Photo = largeentity.NewBlob(photo(2, 40<<10), "image/jpeg")
	largeentity.CrashAfter(s, largeentity.StepUploaded)
	if err := s.Update(b.ctx, &e); !errors.Is(err, largeentity.ErrCrash) {
		t.Fatalf("crash hook did not fire: %v", err)
	}
	largeentity.CrashAfter(s, "")
	if rep := b.sweepAll(); rep.Deleted == 0 {
		t.Fatalf("the sweep deleted nothing: %+v", rep)
	}
	if n := logs.FilterMessage("largeentity: orphan blob deleted").Len(); n == 0 {
		t.Fatal("the sweep's deletion was not logged through the table's logger")
	}
}

// A Store on a blob client authenticated by a SAS (the query of every blob URL) whose
// blob deletes fail, refused (403) or dropped: the warnings it logs through the table's
// logger must hold no SAS query, signature or key.
func TestLogsNeverCarryTheSAS(t *testing.T) {
	t.Parallel()
	for name, action := range map[string]faultproxy.Action{"refused": faultproxy.Respond(http.StatusForbidden, "AuthorizationFailure"), "dropped": faultproxy.DropBeforeForward()} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true, nil)
			sasURL, err := b.Direct.Blobs.ServiceClient().GetSASURL(sas.AccountResourceTypes{Service: true, Container: true, Object: true},
				sas.AccountPermissions{Read: true, Write: true, Delete: true, List: true, Create: true, Add: true}, time.Now().Add(time.Hour), nil)
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(sasURL)
			var blobEP string
			for _, part := range strings.Split(b.Proxies.ConnectionString, ";") {
				if v, ok := strings.CutPrefix(part, "BlobEndpoint="); ok {
					blobEP = strings.TrimSuffix(v, "/")
				}
			}
			blobs, err := azblob.NewClientWithNoCredential(blobEP+"/?"+u.RawQuery, &azblob.ClientOptions{ClientOptions: testenv.ClientOptions()})
			if err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zapcore.DebugLevel)
			table := testbed.NewTable[Employee](b.Bed, &repo.Options{Logger: zap.New(core)})
			s, err := largeentity.New(table, blobs, b.cname, &largeentity.Options{Retry: fast})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Insert(b.ctx, employee("000123", make([]byte, 40<<10))); err != nil {
				t.Fatal(err)
			}
			e, err := s.Get(b.ctx, "Sales", "000123", nil)
			if err != nil {
				t.Fatal(err)
			}
			b.bproxy.AddRule(faultproxy.Rule{Name: "no delete", Match: func(r *http.Request) bool { return r.Method == http.MethodDelete }, Action: action})
			e.Photo = largeentity.NewBlob(photo(2, 40<<10), "image/jpeg")
			if err := s.Update(b.ctx, &e); err != nil {
				t.Fatal(err)
			}
			if logs.Len() == 0 {
				t.Fatal("no warning logged for the blob not deleted")
			}
			sig := u.Query().Get("sig")
			for _, en := range logs.All() {
				text := en.Message
				for k, v := range en.ContextMap() {
					text += " " + k + "=" + strings.TrimSpace(strings.ReplaceAll(toString(v), "\n", " "))
				}
				if strings.Contains(text, "sig=") || strings.Contains(text, "sv=") || (sig != "" && (strings.Contains(text, sig) || strings.Contains(text, url.QueryEscape(sig)))) {
					t.Errorf("log entry holds the SAS: %s", text)
				}
			}
		})
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(zapAny(v), "\t", " "), "\r", ""))
}

func zapAny(v any) string { return strings.TrimSpace(strings.Trim(fmtAny(v), "\"")) }

func fmtAny(v any) string { return fmt.Sprint(v) }
