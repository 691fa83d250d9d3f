// Package tabletest is the implementation of the public package tabletest (in-memory
// Azurite for tests, token credentials Azurite accepts). It lives under internal so that
// the project's own test harness (internal/testenv) can use it without importing upward;
// users import the public package, whose names are aliases of these.
package tabletest
