package azurite

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStartServesAllThreeAndCloseStops(t *testing.T) {
	var log syncBuffer
	s, err := Start(context.Background(), Options{Stdout: &log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for _, u := range []string{s.TableURL, s.QueueURL, s.BlobURL} {
		if !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/"+DevAccountName) {
			t.Errorf("endpoint %q: want http://127.0.0.1:PORT/%s", u, DevAccountName)
		}
		if !strings.Contains(s.ConnectionString, u) {
			t.Errorf("connection string lacks %s", u)
		}
	}
	if !strings.Contains(log.String(), "successfully listening") {
		t.Errorf("Stdout did not receive Azurite's output: %q", log.String())
	}
	resp, err := http.Get(s.TableURL + "/Tables")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()

	pid := s.cmd.Process.Pid
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	select {
	case <-s.exited:
	default:
		t.Fatalf("process %d still running after Close", pid)
	}
	if _, err := os.Stat(s.tempDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("working directory %s not removed: %v", s.tempDir, err)
	}
	client := &http.Client{Timeout: time.Second}
	if resp, err := client.Get(s.TableURL + "/Tables"); err == nil {
		_ = resp.Body.Close()
		t.Errorf("table service still answers after Close")
	}
}

func TestStartWithoutBinaryIsErrNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no azurite on PATH either
	_, err := Start(context.Background(), Options{Dir: t.TempDir()})
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
	for _, want := range []string{"npm install --save-dev azurite", "npm install -g azurite", "run `make test`", "azurite on PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
}

func TestConnectionStringWith(t *testing.T) {
	s := &Server{
		AccountName: DevAccountName, AccountKey: DevAccountKey,
		TableURL: "http://127.0.0.1:1/a", QueueURL: "http://127.0.0.1:2/a", BlobURL: "http://127.0.0.1:3/a",
	}
	got := s.ConnectionStringWith("http://127.0.0.1:9/a/", "", "")
	for _, want := range []string{"TableEndpoint=http://127.0.0.1:9/a;", "QueueEndpoint=http://127.0.0.1:2/a;", "BlobEndpoint=http://127.0.0.1:3/a;", "AccountKey=" + DevAccountKey + ";"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

func TestParseConnectionString(t *testing.T) {
	tests := []struct {
		name, cs         string
		table, queue     string
		wantErr          bool
		account, wantKey string
	}{
		{name: "explicit", cs: "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=k==;TableEndpoint=http://127.0.0.1:5/a/;QueueEndpoint=http://127.0.0.1:6/a;",
			table: "http://127.0.0.1:5/a", queue: "http://127.0.0.1:6/a", account: "a", wantKey: "k=="},
		{name: "suffix", cs: "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=k;EndpointSuffix=core.windows.net",
			table: "https://acct.table.core.windows.net", queue: "https://acct.queue.core.windows.net", account: "acct", wantKey: "k"},
		{name: "dev", cs: "UseDevelopmentStorage=true", table: "http://127.0.0.1:10002/devstoreaccount1", queue: "http://127.0.0.1:10001/devstoreaccount1", account: DevAccountName, wantKey: DevAccountKey},
		{name: "no account", cs: "AccountKey=k;TableEndpoint=http://x", wantErr: true},
		{name: "no endpoint", cs: "AccountName=a;AccountKey=k", wantErr: true},
		{name: "garbage", cs: "AccountName=a;secret", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseConnectionString(tt.cs)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("error quotes the connection string: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.TableURL != tt.table || s.QueueURL != tt.queue || s.AccountName != tt.account || s.AccountKey != tt.wantKey {
				t.Errorf("got %+v", s)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close on a parsed server: %v", err)
			}
		})
	}
}

// Without node_modules/.bin/azurite in Dir, Start finds azurite on PATH.
func TestStartFindsAzuriteOnPath(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	real, err := findBinary(root)
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(real, filepath.Join(bin, "azurite")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	s, err := Start(context.Background(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("Start with azurite on PATH: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// With HTTPS, the endpoints are https, only the server's own certificate is trusted, and
// the services answer through HTTPClient.
func TestStartHTTPS(t *testing.T) {
	t.Parallel()
	s, err := Start(context.Background(), Options{HTTPS: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if !strings.HasPrefix(s.TableURL, "https://127.0.0.1:") || s.RootCAs == nil || !strings.Contains(s.ConnectionString, "DefaultEndpointsProtocol=https") {
		t.Fatalf("endpoints %q, roots %v", s.TableURL, s.RootCAs)
	}
	resp, err := s.HTTPClient().Get(s.QueueURL + "?comp=list")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if _, err := http.Get(s.QueueURL + "?comp=list"); err == nil {
		t.Error("the default client trusted the self-signed certificate")
	}
	if _, err := Start(context.Background(), Options{OAuth: "full"}); err == nil {
		t.Error("an unknown OAuth level was accepted")
	}
}
