package connstring

import (
	"strings"
	"testing"
)

// Parse never panics, and its errors never quote the value of AccountKey or
// SharedAccessSignature, whatever the string.
func FuzzParseNeverQuotesSecrets(f *testing.F) {
	f.Add("AccountName=myaccount;AccountKey=c2VjcmV0a2V5c2VjcmV0a2V5;EndpointSuffix=core.windows.net")
	f.Add("TableEndpoint=https://t.example.com;SharedAccessSignature=sv=2020&sig=c2VjcmV0a2V5")
	f.Add("UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://proxy")
	f.Add("AccountKey=c2VjcmV0a2V5c2VjcmV0a2V5;TableEndpont=x")
	f.Fuzz(func(t *testing.T, cs string) {
		_, err := Parse(cs)
		if err == nil {
			return
		}
		for seg := range strings.SplitSeq(cs, ";") {
			k, v, ok := strings.Cut(seg, "=")
			k = strings.ToLower(strings.TrimSpace(k))
			v = strings.TrimSpace(v)
			if ok && (k == "accountkey" || k == "sharedaccesssignature") && len(v) >= 8 && strings.Contains(err.Error(), v) {
				t.Fatalf("the error quotes the %s: %v", k, err)
			}
		}
	})
}
