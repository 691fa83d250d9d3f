// Command sas shows access control with shared access signatures (the Azure Table storage design guide, "control
// access with shared access signatures") on the guide's employee data, on an embedded,
// in-memory Azurite: a server that holds the account key hands out tokens — one that lets
// the Sales department's app read and update only the Sales partition, one read-only
// token for a dashboard — and the clients use the table with nothing but their token.
//
//	go run ./examples/sas            # on an embedded Azurite
//	go run ./examples/sas -use-env   # on the account of AZURE_STORAGE_CONNECTION_STRING
//
// Azurite checks signatures, permissions, start and expiry, but not key ranges; on Azure
// the Sales token is also refused outside the Sales partition.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/repo/sas"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("sas", run) }

// start runs the example on an embedded Azurite, or with useEnv on the account of
// AZURE_STORAGE_CONNECTION_STRING (a key connection string: tokens are signed with the
// key; the example's table has a unique name and is deleted at the end).
// Employee is the guide's employee entity: the department is the PartitionKey, so that a
// department is one partition and one token range.
type Employee struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	FirstName  string `table:"FirstName"`
	LastName   string `table:"LastName"`
	Phone      string `table:"Phone,omitempty"`
	ETag       string `table:",etag"`
}

var staff = []*Employee{
	{Department: "Sales", EmployeeID: "000123", FirstName: "Don", LastName: "Hall"},
	{Department: "Sales", EmployeeID: "000152", FirstName: "Jun", LastName: "Cao"},
	{Department: "Sales", EmployeeID: "000155", FirstName: "Ken", LastName: "Kwok"},
	{Department: "Marketing", EmployeeID: "000223", FirstName: "Sara", LastName: "Davis"},
	{Department: "Marketing", EmployeeID: "000224", FirstName: "Jake", LastName: "Brown"},
}

func run(ctx context.Context, out io.Writer, connStr string) error {
	// The server side: the account key signs tokens; it never leaves this process.
	key, endpoint, err := sas.SharedKeyFromConnectionString(connStr)
	if err != nil {
		return err
	}
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("Employees%d", time.Now().UnixNano()%1e12)
	owner, err := repo.New[Employee](clients.Tables, name, nil)
	if err != nil {
		return err
	}
	if err := owner.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer owner.DeleteTable(context.WithoutCancel(ctx))
	for _, e := range staff {
		if err := owner.Insert(ctx, e); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "server: stored %d employees in %s, signing tokens with the key of account %s\n", len(staff), name, key.AccountName())

	// Tokens are HTTPS-only by default; the emulator speaks plain HTTP, so for it (and only
	// for it) the tokens allow HTTP too.
	protocol := sas.HTTPSOnly
	if strings.HasPrefix(endpoint, "http://") {
		protocol = sas.HTTPSAndHTTP
	}
	salesRange := sas.Partition("Sales")
	salesToken, err := sas.Values{
		Table:       name,
		Permissions: sas.Permissions{Query: true, Update: true},
		Start:       time.Now().Add(-5 * time.Minute), // allow for clock skew
		Expiry:      time.Now().Add(time.Hour),
		Range:       salesRange,
		Protocol:    protocol,
	}.Sign(key)
	if err != nil {
		return err
	}
	dashToken, err := sas.Values{Table: name, Permissions: sas.Permissions{Query: true}, Expiry: time.Now().Add(15 * time.Minute), Protocol: protocol}.Sign(key)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "server: Sales app token  %s\n", describe(salesToken))
	fmt.Fprintf(out, "server: dashboard token  %s\n", describe(dashToken))

	// The Sales app: the token, the endpoint and the table name are all it has.
	salesApp, err := tableWithToken(endpoint, salesToken, name)
	if err != nil {
		return err
	}
	sales, err := salesApp.Collect(ctx, repo.Query{Filter: filter.PartitionKey("Sales")})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Sales app: read its partition: %d employees\n", len(sales))
	jun, err := salesApp.Get(ctx, "Sales", "000152")
	if err != nil {
		return err
	}
	jun.Phone = "425-555-0101"
	if err := salesApp.Update(ctx, &jun, nil); err != nil {
		return err
	}
	fmt.Fprintf(out, "Sales app: updated %s %s's phone to %s (conditional on its ETag)\n", jun.FirstName, jun.LastName, jun.Phone)
	err = salesApp.Insert(ctx, &Employee{Department: "Sales", EmployeeID: "000199", FirstName: "New", LastName: "Hire"})
	fmt.Fprintf(out, "Sales app: insert refused: %s (the token grants query and update only)\n", status(err))
	// The app knows its range, and does not ask for what it cannot have.
	if !salesRange.Contains("Marketing", "000223") {
		fmt.Fprintln(out, "Sales app: Marketing/000223 is outside its token's range (Azure refuses it; Azurite does not check ranges)")
	}

	// The dashboard reads everything and changes nothing.
	dash, err := tableWithToken(endpoint, dashToken, name)
	if err != nil {
		return err
	}
	all, err := dash.Collect(ctx, repo.Query{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "dashboard: read %d employees across %d departments\n", len(all), departments(all))
	err = dash.Delete(ctx, "Sales", "000123", nil)
	fmt.Fprintf(out, "dashboard: delete refused: %s\n", status(err))

	// Tokens end. An expired token opens nothing.
	expired, err := sas.Values{Table: name, Permissions: sas.Permissions{Query: true}, Protocol: protocol,
		Start: time.Now().Add(-2 * time.Hour), Expiry: time.Now().Add(-time.Hour)}.Sign(key)
	if err != nil {
		return err
	}
	old, err := tableWithToken(endpoint, expired, name)
	if err != nil {
		return err
	}
	_, err = old.Get(ctx, "Sales", "000123")
	fmt.Fprintf(out, "expired token: refused: %s\n", status(err))

	// aztables' own key-range token signs the range but leaves it out of the URL.
	cred, err := aztables.NewSharedKeyCredential(key.AccountName(), accountKey(connStr))
	if err != nil {
		return err
	}
	azToken, err := aztables.SASSignatureValues{TableName: name, Permissions: "r", ExpiryTime: time.Now().Add(time.Hour),
		StartPartitionKey: "Sales", EndPartitionKey: "Sales"}.Sign(cred)
	if err != nil {
		return err
	}
	az, err := tableWithToken(endpoint, azToken, name)
	if err != nil {
		return err
	}
	_, err = az.Get(ctx, "Sales", "000123")
	fmt.Fprintf(out, "aztables' Sales token (%s): refused: %s\n", describe(azToken), status(err))

	fmt.Fprintln(out, "sas example finished")
	return nil
}

// tableWithToken is what a client holding only a token does.
func tableWithToken(endpoint, token, table string) (*repo.Table[Employee], error) {
	svc, err := repo.NewTablesWithSAS(endpoint, token, nil)
	if err != nil {
		return nil, err
	}
	return repo.New[Employee](svc, table, nil)
}

// describe lists a token's fields, never its signature.
func describe(token string) string {
	q, err := url.ParseQuery(token)
	if err != nil {
		return "(malformed)"
	}
	s := ""
	for _, k := range []string{"sv", "sp", "st", "se", "spr", "spk", "srk", "epk", "erk"} {
		if v := q.Get(k); v != "" {
			s += k + "=" + v + " "
		}
	}
	if q.Has("sig") {
		s += "sig=(not shown)"
	}
	return s
}

func status(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprintf("%d %s", re.StatusCode, re.ErrorCode)
	}
	if err == nil {
		return "not refused"
	}
	return err.Error()
}

func departments(all []Employee) int {
	seen := map[string]bool{}
	for _, e := range all {
		seen[e.Department] = true
	}
	return len(seen)
}

// accountKey reads the key for aztables' credential (the comparison above only).
func accountKey(connStr string) string {
	for _, part := range strings.Split(connStr, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && strings.EqualFold(k, "AccountKey") {
			return v
		}
	}
	return ""
}
