// Package sas creates shared access signatures (SAS) for tables: tokens that let a client
// read or write a table, or only a range of its entities, without the account key.
//
// # The guide's problem and solution
//
// The Azure Table storage design guide ("Control access with shared access
// signatures"): devices and end users should not hold the storage account key, yet they should
// be able to query and change their own entities directly, taking work off the web and
// worker roles. A SAS token grants a limited set of permissions (query, add, update,
// delete) on one table, for a limited time, optionally only from some IP addresses or
// over HTTPS, and optionally only on a range of PartitionKey values, or of PartitionKey
// and RowKey values: give every user a token for their own partition, and each user
// reaches only their own entities. Tokens are generated where the account key is safe
// (a server) and handed out; generating them costs no request.
//
// # Use
//
//	key, endpoint, err := sas.SharedKeyFromConnectionString(connStr) // server side
//	token, err := sas.Values{
//		Table:       "Employees",
//		Permissions: sas.Permissions{Query: true, Update: true},
//		Expiry:      time.Now().Add(time.Hour),
//		Range:       sas.Partition("Sales"),                         // HTTPS only by default
//	}.Sign(key)
//
//	svc, err := repo.NewTablesWithSAS(endpoint, token, nil)          // client side
//	emps, err := repo.New[Employee](svc, "Employees", nil)
//
// # Signing needs the account key
//
// A table SAS is signed with the storage account key (a SharedKey); nothing else can sign
// one. Accounts with shared-key access turned off, and programs that authenticate with a
// Microsoft Entra ID token credential (account.NewTokenClients), cannot issue table SAS
// tokens at all: the service offers user delegation SAS for blobs only. Give such clients a
// token credential of their own, with a role scoped to the table, instead.
//
// # What is signed, and what is sent
//
// The token follows "Create a service SAS" of the Storage REST reference, table format of
// version 2015-04-05 and later (tokens default to sv=2019-02-02, the version aztables
// v1.4.1 speaks). The string-to-sign is
//
//	signedPermissions + "\n" + signedStart + "\n" + signedExpiry + "\n" +
//	"/table/" + account + "/" + lowercase(table) + "\n" + signedIdentifier + "\n" +
//	signedIP + "\n" + signedProtocol + "\n" + signedVersion + "\n" +
//	startingPartitionKey + "\n" + startingRowKey + "\n" +
//	endingPartitionKey + "\n" + endingRowKey
//
// with empty lines for the fields not set (the four range lines are always present), and
// the signature is the base64 HMAC-SHA256 of its UTF-8 bytes under the base64-decoded
// account key. The token carries every field that is set: sv, tn, sp, st, se, sip, spr,
// si, spk, srk, epk, erk and sig. aztables v1.4.1 (SASSignatureValues.Sign) signs the
// range fields but leaves spk, srk, epk and erk out of the URL, so the service computes
// another signature and refuses its key-range tokens with 403; this package is the fix.
//
// # Secure defaults
//
// A token is a bearer secret. Tokens are HTTPS-only unless HTTP is asked for explicitly
// (Values.Protocol = HTTPSAndHTTP, for the emulator): a token without spr would also work
// over plain HTTP. repo.NewTablesWithSAS refuses a plain http endpoint unless its host is
// loopback or repo.ClientOptions.AllowHTTP is set. Every signed field is checked to stay
// one line of the string-to-sign: keys and table names by the service's rules, the
// Identifier as printable characters without line breaks, so that no value can shift the
// fields after it.
//
// # Consistency and limits of enforcement
//
// A token is checked by the service on every request; nothing is cached on the client.
// The service enforces permissions, start and expiry, protocol, IP range and key range.
// Azurite, the emulator, enforces the signature (with the range fields, so a token that
// dropped them fails there too), permissions, start and expiry and the protocol, but not
// the key range or the IP range: tests of those run against the documented format
// (Range.Contains implements the service's range rules).
//
// An ad hoc token cannot be revoked before it expires, except by regenerating the account
// key; a token naming a stored access policy (Values.Identifier) is revoked by changing or
// deleting the policy. Keep expiry short.
//
// # User delegation keys
//
// Not supported, because the libraries do not allow it for tables: a user delegation SAS
// is signed with a key obtained by the Get User Delegation Key operation, which aztables
// v1.4.1 does not expose (it is an operation of the Blob service endpoint, reached through
// azblob's service client, and its REST reference scopes user delegation SAS to Blob
// storage at the service versions aztables uses), and the table string-to-sign of those
// versions has no delegation fields (skoid, sktid, skt, ske, sks, skv). Much newer service
// versions (2026-02-06, in the Queue SDKs of other languages) extend user delegation SAS
// beyond Blob storage; aztables v1.4.1 neither speaks them nor can fetch such a key. Use
// Microsoft Entra ID credentials with aztables directly
// (NewServiceClient with a token credential, and repo.TableClientOptions) where a SAS
// signed by the account key is not wanted.
//
// # Errors
//
// Every refusal is an *errs.InvalidInputError (errors.Is ErrInvalidInput) naming the field;
// nothing is signed then. Errors never contain the account key or a token.
package sas
