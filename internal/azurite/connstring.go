package azurite

import (
	"errors"
	"fmt"
	"strings"
)

// ParseConnectionString returns a Server for an account that runs elsewhere (real Azure, the
// Cosmos DB Table API, or an Azurite started by hand), described by an Azure Storage
// connection string. Close on it does nothing.
//
// It accepts explicit endpoints (TableEndpoint, QueueEndpoint, BlobEndpoint), endpoints
// derived from AccountName and EndpointSuffix (https://ACCOUNT.table.SUFFIX), and
// UseDevelopmentStorage=true (Azurite on its default ports). A missing endpoint stays empty.
// Errors never quote the connection string, since it holds the account key.
func ParseConnectionString(cs string) (*Server, error) {
	fields := map[string]string{}
	for _, part := range strings.Split(cs, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, errors.New("azurite: malformed connection string: a part has no '='")
		}
		fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	if strings.EqualFold(fields["usedevelopmentstorage"], "true") {
		s := &Server{
			AccountName: DevAccountName,
			AccountKey:  DevAccountKey,
			BlobURL:     "http://127.0.0.1:10000/" + DevAccountName,
			QueueURL:    "http://127.0.0.1:10001/" + DevAccountName,
			TableURL:    "http://127.0.0.1:10002/" + DevAccountName,
		}
		s.ConnectionString = buildConnectionString(s.AccountName, s.AccountKey, s.BlobURL, s.QueueURL, s.TableURL)
		return s, nil
	}
	s := &Server{
		AccountName:      fields["accountname"],
		AccountKey:       fields["accountkey"],
		TableURL:         strings.TrimRight(fields["tableendpoint"], "/"),
		QueueURL:         strings.TrimRight(fields["queueendpoint"], "/"),
		BlobURL:          strings.TrimRight(fields["blobendpoint"], "/"),
		ConnectionString: cs,
	}
	if s.AccountName == "" {
		return nil, errors.New("azurite: connection string has no AccountName")
	}
	if suffix := fields["endpointsuffix"]; suffix != "" {
		protocol := fields["defaultendpointsprotocol"]
		if protocol == "" {
			protocol = "https"
		}
		derive := func(cur *string, service string) {
			if *cur == "" {
				*cur = fmt.Sprintf("%s://%s.%s.%s", protocol, s.AccountName, service, suffix)
			}
		}
		derive(&s.TableURL, "table")
		derive(&s.QueueURL, "queue")
		derive(&s.BlobURL, "blob")
	}
	if s.TableURL == "" && s.QueueURL == "" && s.BlobURL == "" {
		return nil, errors.New("azurite: connection string has no endpoint and no EndpointSuffix")
	}
	return s, nil
}
