package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// checkURL refuses a URL that is not https; plain http only to a loopback
// address (for tests and local mirrors), named by its IP or as localhost.
func checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%w: %q", ErrInsecureURL, raw)
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		if isLoopback(u.Hostname()) {
			return u, nil
		}
	}
	return nil, fmt.Errorf("%w: %s (plain http only to a loopback address)", ErrInsecureURL, u.Redacted())
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// maxRedirects bounds a download's redirects (GitHub's releases take one).
const maxRedirects = 5

// httpClient is c with a redirect policy that applies checkURL to every
// hop: an https download never continues over plain http.
func httpClient(c *http.Client) *http.Client {
	if c == nil {
		c = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			TLSHandshakeTimeout:   30 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
			ForceAttemptHTTP2:     true,
		}}
	}
	cc := *c
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("%w: more than %d redirects", ErrDownload, maxRedirects)
		}
		if _, err := checkURL(req.URL.String()); err != nil {
			return err
		}
		if c.CheckRedirect != nil {
			return c.CheckRedirect(req, via)
		}
		return nil
	}
	return &cc
}

// get starts a GET of raw with extra headers; the caller closes the body.
// A status other than 200 (and 304 when allow304) is an ErrDownload.
func get(ctx context.Context, client *http.Client, raw string, header http.Header, allow304 bool) (*http.Response, error) {
	u, err := checkURL(raw)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "acphost-registry")
	resp, err := httpClient(client).Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			if errors.Is(ue.Err, ErrInsecureURL) {
				return nil, ue.Err
			}
			err = ue.Err // without its copy of the URL
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrDownload, u.Redacted(), err)
	}
	if resp.StatusCode == http.StatusOK || (allow304 && resp.StatusCode == http.StatusNotModified) {
		return resp, nil
	}
	resp.Body.Close()
	return nil, fmt.Errorf("%w: %s: HTTP %s", ErrDownload, u.Redacted(), resp.Status)
}

// readCapped reads r to the end, refusing more than limit bytes.
func readCapped(r io.Reader, limit int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(what, limit)
	}
	return b, nil
}
