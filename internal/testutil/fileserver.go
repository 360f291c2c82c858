package testutil

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// FileServer is a loopback HTTPS server (httptest's test CA: its Client
// trusts it, and a program given CAFile's file as SSL_CERT_FILE does)
// serving files by path, with an ETag where one is set, and counting the
// requests of each path. It closes when the test ends.
type FileServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	etags map[string]string
	funcs map[string]http.HandlerFunc
	hits  map[string]int
	inm   map[string]string // the last If-None-Match of each path
}

// NewFileServer starts a FileServer serving nothing yet.
func NewFileServer(t testing.TB) *FileServer {
	s := &FileServer{files: map[string][]byte{}, etags: map[string]string{}, funcs: map[string]http.HandlerFunc{},
		hits: map[string]int{}, inm: map[string]string{}}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *FileServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.inm[r.URL.Path] = r.Header.Get("If-None-Match")
	b, ok := s.files[r.URL.Path]
	etag := s.etags[r.URL.Path]
	fn := s.funcs[r.URL.Path]
	s.mu.Unlock()
	switch {
	case fn != nil:
		fn(w, r)
	case !ok:
		http.NotFound(w, r)
	case etag != "" && r.Header.Get("If-None-Match") == etag:
		w.WriteHeader(http.StatusNotModified)
	default:
		if etag != "" {
			w.Header().Set("ETag", etag)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	}
}

// Put serves b at path and returns its URL.
func (s *FileServer) Put(path string, b []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = b
	return s.URL + path
}

// SetETag gives path's file an ETag: a request with it as If-None-Match
// is answered 304.
func (s *FileServer) SetETag(path, etag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.etags[path] = etag
}

// Handle serves path with fn and returns its URL.
func (s *FileServer) Handle(path string, fn http.HandlerFunc) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.funcs[path] = fn
	return s.URL + path
}

// Count is how many requests path had.
func (s *FileServer) Count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// IfNoneMatch is the If-None-Match of path's last request.
func (s *FileServer) IfNoneMatch(path string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inm[path]
}

// CAFile writes the server's certificate as a PEM file (for SSL_CERT_FILE)
// and returns its path.
func (s *FileServer) CAFile(t testing.TB) string {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return ca
}
