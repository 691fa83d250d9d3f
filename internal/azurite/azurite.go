package azurite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
)

// The well-known development account that Azurite serves. The key is public (it is printed
// in Microsoft's documentation); it protects nothing.
const (
	// DevAccountName is the account name Azurite serves.
	DevAccountName = "devstoreaccount1"
	// DevAccountKey is the well-known key of DevAccountName.
	DevAccountKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// DefaultStartTimeout bounds Start when the context has no earlier deadline. Azurite starts
// in about 2 s here; the bound leaves room for a loaded CI machine.
const DefaultStartTimeout = 30 * time.Second

// ErrNotInstalled is returned by Start when node_modules/.bin/azurite does not exist. The
// error returned wraps it and names the path that was looked at.
//
// The message starts with a capital letter, against Go habit, because it is addressed to a
// person reading test output and names the product.
var ErrNotInstalled = errors.New("Azurite is not installed: run `make test` (it runs npm ci)")

// Options configures Start. The zero value is ready to use.
type Options struct {
	// Dir is the directory holding node_modules/.bin/azurite. Defaults to the nearest
	// directory at or above the working directory that holds a go.mod file (the module root,
	// where `npm ci` installs it).
	Dir string
	// Stdout, if not nil, receives Azurite's output (stdout and stderr), written from two
	// goroutines at once: it must be safe for concurrent use.
	Stdout io.Writer
}

// Server is a running Azurite, or (from ParseConnectionString) an account served elsewhere.
// Its fields are read-only.
type Server struct {
	// AccountName and AccountKey are the shared-key credentials of the account.
	AccountName, AccountKey string
	// TableURL, QueueURL and BlobURL are the service endpoints, e.g.
	// http://127.0.0.1:PORT/devstoreaccount1 (no trailing slash).
	TableURL, QueueURL, BlobURL string
	// ConnectionString holds all of the above in the Azure connection-string format. It
	// contains the account key: do not log it.
	ConnectionString string

	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited and waitErr is set
	waitErr error
	tempDir string

	closeOnce sync.Once
	closeErr  error
}

// listenLine matches Azurite's start-up lines, printed even with --silent:
// "Azurite Table service is successfully listening at http://127.0.0.1:37297".
var listenLine = regexp.MustCompile(`Azurite (Blob|Queue|Table) service is successfully listening at (https?://\S+)`)

// Start runs Azurite in memory on 127.0.0.1 with free ports and returns once the Blob,
// Queue and Table services all answer HTTP, or fails after ctx is done or
// DefaultStartTimeout has passed, whichever comes first. The process outlives ctx: stop it
// with Close.
//
// It returns an error wrapping ErrNotInstalled if the Azurite binary is missing, and an
// error quoting Azurite's last output if the process exits or does not become ready.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := findBinary(opts.Dir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultStartTimeout)
	defer cancel()

	// Azurite writes its Loki databases and debug log to the working directory unless told
	// otherwise; a temporary directory keeps the module tree clean. (--location conflicts
	// with --inMemoryPersistence.)
	tempDir, err := os.MkdirTemp("", "azurite-")
	if err != nil {
		return nil, fmt.Errorf("azurite: %w", err)
	}
	cmd := exec.Command(bin,
		"--inMemoryPersistence", "--silent", "--skipApiVersionCheck", "--disableTelemetry",
		"--blobHost", "127.0.0.1", "--queueHost", "127.0.0.1", "--tableHost", "127.0.0.1",
		"--blobPort", "0", "--queuePort", "0", "--tablePort", "0",
	)
	cmd.Dir = tempDir
	cmd.SysProcAttr = sysProcAttr()
	tail := &tailBuffer{max: 4096}
	var extra io.Writer = tail
	if opts.Stdout != nil {
		extra = io.MultiWriter(tail, opts.Stdout)
	}
	cmd.Stderr = extra
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_ = os.RemoveAll(tempDir)
		return nil, fmt.Errorf("azurite: %w", err)
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(tempDir)
		return nil, fmt.Errorf("azurite: starting %s: %w", bin, err)
	}
	s := &Server{
		AccountName: DevAccountName,
		AccountKey:  DevAccountKey,
		cmd:         cmd,
		exited:      make(chan struct{}),
		tempDir:     tempDir,
	}
	// Read stdout until all three endpoints are known, then keep draining it so that
	// Azurite never blocks on a full pipe. cmd.Wait must only run after the reads finish.
	endpoints := make(chan map[string]string, 1)
	go func() {
		found := map[string]string{}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			_, _ = io.WriteString(extra, line+"\n")
			if m := listenLine.FindStringSubmatch(line); m != nil && len(found) < 3 {
				found[m[1]] = strings.TrimRight(m[2], "/")
				if len(found) == 3 {
					endpoints <- found
				}
			}
		}
		_, _ = io.Copy(extra, stdout)
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()

	fail := func(err error) (*Server, error) {
		_ = s.Close()
		return nil, fmt.Errorf("azurite: %w; last output:\n%s", err, tail.String())
	}
	var found map[string]string
	select {
	case found = <-endpoints:
	case <-s.exited:
		return fail(fmt.Errorf("exited before listening (%v)", s.waitErr))
	case <-ctx.Done():
		return fail(fmt.Errorf("no listening lines: %w", ctx.Err()))
	}
	account := "/" + DevAccountName
	s.BlobURL = found["Blob"] + account
	s.QueueURL = found["Queue"] + account
	s.TableURL = found["Table"] + account
	s.ConnectionString = buildConnectionString(s.AccountName, s.AccountKey, s.BlobURL, s.QueueURL, s.TableURL)
	if err := s.waitReady(ctx); err != nil {
		return fail(err)
	}
	return s, nil
}

// waitReady polls every service until it answers HTTP (any status: an unsigned request gets
// 400 or 403, which proves the listener serves requests).
func (s *Server) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	pending := []string{s.BlobURL + "?comp=list", s.QueueURL + "?comp=list", s.TableURL + "/Tables"}
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for {
		var still []string
		for _, u := range pending {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				still = append(still, u)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		pending = still
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ticker.C:
		case <-s.exited:
			return fmt.Errorf("exited while starting (%v)", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%s not answering: %w", strings.Join(pending, ", "), ctx.Err())
		}
	}
}

// Close stops Azurite and its children (SIGTERM to the process group, SIGKILL after 10 s),
// waits for the process to exit and removes its working directory. It is safe to call more
// than once and does nothing on a Server from ParseConnectionString. It returns an error
// only if the process could not be signalled or the directory not removed; the exit status
// of a process stopped by Close is not an error.
func (s *Server) Close() error {
	if s == nil || s.cmd == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		select {
		case <-s.exited:
		default:
			if err := terminate(s.cmd.Process); err != nil && !errors.Is(err, os.ErrProcessDone) {
				s.closeErr = fmt.Errorf("azurite: stopping: %w", err)
			}
			timer := time.NewTimer(10 * time.Second)
			select {
			case <-s.exited:
				timer.Stop()
			case <-timer.C:
				_ = kill(s.cmd.Process)
				<-s.exited
			}
		}
		if err := os.RemoveAll(s.tempDir); err != nil && s.closeErr == nil {
			s.closeErr = fmt.Errorf("azurite: %w", err)
		}
	})
	return s.closeErr
}

// ConnectionStringWith returns the connection string with every non-empty argument replacing
// the matching endpoint, e.g. to route one service through a fault proxy:
//
//	s.ConnectionStringWith(proxy.URL()+"/"+s.AccountName, "", "")
func (s *Server) ConnectionStringWith(tableURL, queueURL, blobURL string) string {
	t, q, b := s.TableURL, s.QueueURL, s.BlobURL
	if tableURL != "" {
		t = strings.TrimRight(tableURL, "/")
	}
	if queueURL != "" {
		q = strings.TrimRight(queueURL, "/")
	}
	if blobURL != "" {
		b = strings.TrimRight(blobURL, "/")
	}
	return buildConnectionString(s.AccountName, s.AccountKey, b, q, t)
}

func buildConnectionString(account, key, blobURL, queueURL, tableURL string) string {
	protocol := "http"
	if strings.HasPrefix(tableURL, "https://") {
		protocol = "https"
	}
	return fmt.Sprintf("DefaultEndpointsProtocol=%s;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;QueueEndpoint=%s;TableEndpoint=%s;",
		protocol, account, key, blobURL, queueURL, tableURL)
}

// findBinary locates node_modules/.bin/azurite under dir, or under the module root when dir
// is empty.
func findBinary(dir string) (string, error) {
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", fmt.Errorf("%w (%v)", ErrNotInstalled, err)
		}
		dir = root
	}
	names := []string{"azurite"}
	if runtime.GOOS == "windows" {
		names = []string{"azurite.cmd", "azurite.exe"}
	}
	var tried []string
	for _, n := range names {
		p := filepath.Join(dir, "node_modules", ".bin", n)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("%w (no %s)", ErrNotInstalled, strings.Join(tried, " or "))
}

// moduleRoot walks up from the working directory to the directory holding go.mod. Test
// binaries run in their package's directory, so this finds the module root from any package.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod at or above %s", wd)
		}
		d = parent
	}
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
