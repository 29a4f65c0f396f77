package s3test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Version is the versitygw release the tests run (.ci/run installs it).
const Version = "v1.8.0"

// Module is what "go install" builds.
const Module = "github.com/versity/versitygw/cmd/versitygw"

// Throwaway credentials of the test server's root user.
const (
	AccessKey = "edrtestaccess"
	SecretKey = "edrtestsecret0123456789"
	Region    = "us-east-1"
)

var (
	findOnce sync.Once
	binPath  string
	findErr  error
)

// Binary returns the versitygw binary: on PATH, in $GOBIN, $GOPATH/bin or
// $HOME/go/bin, else built with "go install Module@Version". The error
// says why there is none.
func Binary() (string, error) {
	findOnce.Do(func() {
		if p, err := exec.LookPath("versitygw"); err == nil {
			binPath = p
			return
		}
		var dirs []string
		if d := os.Getenv("GOBIN"); d != "" {
			dirs = append(dirs, d)
		}
		if d := os.Getenv("GOPATH"); d != "" {
			dirs = append(dirs, filepath.Join(d, "bin"))
		}
		if h, err := os.UserHomeDir(); err == nil {
			dirs = append(dirs, filepath.Join(h, "go", "bin"))
		}
		for _, d := range dirs {
			if p := filepath.Join(d, "versitygw"); isExec(p) {
				binPath = p
				return
			}
		}
		out, err := exec.Command("go", "install", Module+"@"+Version).CombinedOutput()
		if err != nil {
			findErr = fmt.Errorf("versitygw is not installed and go install %s@%s failed: %v\n%s", Module, Version, err, out)
			return
		}
		for _, d := range dirs {
			if p := filepath.Join(d, "versitygw"); isExec(p) {
				binPath = p
				return
			}
		}
		findErr = errors.New("versitygw: go install succeeded but the binary was not found in GOBIN, GOPATH/bin or ~/go/bin")
	})
	return binPath, findErr
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Server is a versitygw S3 gateway with its POSIX backend over a temporary
// directory, on 127.0.0.1, for one test.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT (https:// from StartTLS)
	Dir      string // the backend's root: one directory per bucket
	// CertPEM is the server's self-signed certificate (StartTLS), nil
	// over plain HTTP: a client that does not trust it fails the
	// handshake with "certificate signed by unknown authority".
	CertPEM []byte
	tlsArgs []string
	addr    string
	bin     string
	t       testing.TB
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	logs    *bytes.Buffer
}

// Start starts a server for t, stopped when t ends. It skips t (with the
// reason) only when versitygw can be neither found nor built.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, false)
}

// StartTLS is Start serving HTTPS with a self-signed certificate for
// 127.0.0.1 (CertPEM), made for the test: Client trusts it, a client with
// the system's roots does not.
func StartTLS(t testing.TB) *Server {
	t.Helper()
	return start(t, true)
}

func start(t testing.TB, withTLS bool) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an S3 server (versitygw); skipped in -short mode")
	}
	bin, err := Binary()
	if err != nil {
		t.Skipf("no S3 server for the test: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &Server{Endpoint: "http://" + addr, Dir: t.TempDir(), addr: addr, bin: bin, t: t, logs: &bytes.Buffer{}}
	if withTLS {
		cert, key := selfSigned(t)
		dir := t.TempDir()
		cf, kf := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		if err := errors.Join(os.WriteFile(cf, cert, 0o600), os.WriteFile(kf, key, 0o600)); err != nil {
			t.Fatal(err)
		}
		s.Endpoint, s.CertPEM, s.tlsArgs = "https://"+addr, cert, []string{"--cert", cf, "--key", kf}
	}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Restart starts the server again on the same address and directory (it
// must be stopped).
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.t.Fatal("s3test: Restart of a running server")
	}
	args := append([]string{"--port", s.addr, "--access", AccessKey, "--secret", SecretKey, "--region", Region, "--quiet"}, s.tlsArgs...)
	cmd := exec.Command(s.bin, append(args, "posix", s.Dir)...)
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("s3test: starting versitygw: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			s.t.Fatalf("s3test: versitygw exited at start:\n%s", s.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			s.t.Fatalf("s3test: versitygw not listening on %s after 30s:\n%s", s.addr, s.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.cmd, s.exited = cmd, exited
}

// Stop kills the server (SIGKILL: connections in flight are cut, as a
// crashed or unplugged server would cut them) and waits for it to exit.
// Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Pause stops the server's process (SIGSTOP): connections stay open and
// nothing answers, as on a link that stalls. Resume continues it.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Signal(sig)
	}
}

// Running reports whether the server is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Client returns an S3 client of the server with the root credentials.
func (s *Server) Client() *s3.Client {
	var hc aws.HTTPClient
	if s.CertPEM != nil {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(s.CertPEM)
		hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	}
	return s3.NewFromConfig(aws.Config{Region: Region, HTTPClient: hc,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: AccessKey, SecretAccessKey: SecretKey}, nil
		})}, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.Endpoint)
		o.UsePathStyle = true
	})
}

// CreateBucket creates a bucket.
func (s *Server) CreateBucket(name string) {
	s.t.Helper()
	if _, err := s.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		s.t.Fatalf("s3test: create bucket %s: %v", name, err)
	}
}

// Object is one object of a listing.
type Object struct {
	Key  string
	Size int64
}

// List lists every object of bucket under prefix.
func (s *Server) List(bucket, prefix string) []Object {
	s.t.Helper()
	var out []Object
	p := s3.NewListObjectsV2Paginator(s.Client(), &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			s.t.Fatalf("s3test: list %s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size)})
		}
	}
	return out
}

// Get downloads an object.
func (s *Server) Get(bucket, key string) []byte {
	s.t.Helper()
	out, err := s.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		s.t.Fatalf("s3test: get %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		s.t.Fatalf("s3test: get %s/%s: %v", bucket, key, err)
	}
	return b
}

// Uploads lists the multipart uploads in progress in bucket.
func (s *Server) Uploads(bucket string) []types.MultipartUpload {
	s.t.Helper()
	out, err := s.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		s.t.Fatalf("s3test: list uploads of %s: %v", bucket, err)
	}
	return out.Uploads
}

// Logs returns what the server printed.
func (s *Server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// Parts returns how many parts the server holds of a multipart upload (0
// when it knows no such upload).
func (s *Server) Parts(bucket, key, id string) int {
	out, err := s.Client().ListParts(context.Background(), &s3.ListPartsInput{Bucket: &bucket, Key: &key, UploadId: &id})
	if err != nil {
		return 0
	}
	return len(out.Parts)
}

// selfSigned makes a certificate and key (PEM) for 127.0.0.1, valid for a
// day.
func selfSigned(t testing.TB) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "s3test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}
