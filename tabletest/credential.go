package tabletest

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// TestTenantID is the tenant named in the tokens of a Credential whose TenantID is empty.
const TestTenantID = "72f988bf-0000-4000-8000-00000000beef"

// Credential is an azcore.TokenCredential for tests against a Server with Options.OAuth. It
// issues JSON Web Tokens shaped like Microsoft Entra ID's: the audience is the requested
// scope without "/.default" (https://storage.azure.com for the storage clients), the issuer
// https://sts.windows.net/TENANT/, and iat, nbf and exp give the lifetime. They are signed
// with a random key that nobody checks: Azurite's basic OAuth level verifies the audience,
// issuer and lifetime, not the signature, and so proves only that a client sends the
// bearer token a real credential would give it. The zero value is ready to use.
type Credential struct {
	// TenantID is the tenant in the issuer. Defaults to TestTenantID.
	TenantID string
	// Lifetime is how long a token is valid. Defaults to one hour. A negative Lifetime
	// issues tokens that expired that long ago, to test that expired tokens are refused.
	Lifetime time.Duration
	// Audience, if set, replaces the audience derived from the scope, to test that tokens
	// for another resource are refused.
	Audience string

	issued atomic.Int64
}

// Credential returns a new Credential for the server (it does not depend on the server;
// any Server with Options.OAuth accepts its tokens).
func (s *Server) Credential() *Credential { return &Credential{} }

// Issued returns how many tokens GetToken has issued: a test asserts that its clients
// really authenticated with this credential.
func (c *Credential) Issued() int64 { return c.issued.Load() }

// GetToken issues a token for the one scope in opts (the storage clients ask for
// https://storage.azure.com/.default).
//
// Errors: if opts does not name exactly one scope.
func (c *Credential) GetToken(_ context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	if len(opts.Scopes) != 1 || opts.Scopes[0] == "" {
		return azcore.AccessToken{}, fmt.Errorf("tabletest: Credential.GetToken wants one scope, got %d", len(opts.Scopes))
	}
	aud := strings.TrimSuffix(opts.Scopes[0], "/.default")
	if c.Audience != "" {
		aud = c.Audience
	}
	tenant := c.TenantID
	if tenant == "" {
		tenant = TestTenantID
	}
	if opts.TenantID != "" {
		tenant = opts.TenantID
	}
	life := c.Lifetime
	if life == 0 {
		life = time.Hour
	}
	now := time.Now()
	iat := now.Add(-5 * time.Minute)
	exp := now.Add(life)
	if life < 0 {
		iat = exp.Add(-time.Hour)
	}
	claims := map[string]any{
		"aud": aud,
		"iss": "https://sts.windows.net/" + tenant + "/",
		"iat": iat.Unix(),
		"nbf": iat.Unix(),
		"exp": exp.Unix(),
		"tid": tenant,
		"oid": "00000000-0000-4000-8000-0000000000a1",
		"sub": "tabletest",
		"ver": "1.0",
	}
	tok, err := signHS256(claims)
	if err != nil {
		return azcore.AccessToken{}, err
	}
	c.issued.Add(1)
	return azcore.AccessToken{Token: tok, ExpiresOn: exp}, nil
}

// signHS256 returns a compact JWS of claims signed with HMAC-SHA256 under a fresh random
// key: well-formed, verifiable by nobody.
func signHS256(claims map[string]any) (string, error) {
	header, err := json.Marshal(map[string]string{"alg": "HS256", "typ": "JWT"})
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(body)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", errors.New("tabletest: no randomness for the token key")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil)), nil
}
