//go:build interop

package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost/web"
)

// testWeb drives the real agent through web.Server, as a page would: the
// prompt POSTed, the permission dialog read from the event stream and
// answered through the endpoint, the turn's text and end streamed, the
// file on disk.
func testWeb(t *testing.T, a Agent) {
	p := prepare(t, a)
	work, opts := p.work, p.opts
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	srv, err := web.New(ctx, web.Config{Agent: opts})
	if err != nil {
		t.Fatalf("web.New: %v", err)
	}
	hs := httptest.NewServer(srv)
	defer func() {
		hs.CloseClientConnections()
		srv.Close()
		hs.Close()
	}()
	auth := "Bearer " + srv.Token()

	events := make(chan map[string]any, 1<<12)
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, hs.URL+"/events", nil)
	req.Header.Set("Authorization", auth)
	resp, err := hs.Client().Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %v %v", err, resp)
	}
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev map[string]any
				if json.Unmarshal([]byte(data), &ev) == nil {
					events <- ev
				}
			}
		}
	}()
	post := func(path string, body any) {
		b, _ := json.Marshal(body)
		r, _ := http.NewRequest(http.MethodPost, hs.URL+path, strings.NewReader(string(b)))
		r.Header.Set("Authorization", auth)
		r.Header.Set("Content-Type", "application/json")
		res, err := hs.Client().Do(r)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s", path, res.StatusCode, out)
		}
	}

	post("/api/prompt", map[string]string{"text": prompt("sh:out1.txt").Prompt})
	var text strings.Builder
	answered := false
	deadline := time.After(turnTimeout)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the event stream ended")
			}
			switch ev["type"] {
			case "text":
				s, _ := ev["delta"].(string)
				text.WriteString(s)
			case "dialog":
				if ev["kind"] != "permission" || answered {
					continue
				}
				id, _ := ev["id"].(string)
				perm, _ := ev["permission"].(map[string]any)
				opts, _ := perm["options"].([]any)
				option := ""
				for _, o := range opts {
					o, _ := o.(map[string]any)
					if o["kind"] == "allow_once" {
						option, _ = o["id"].(string)
						break
					}
				}
				if option == "" {
					t.Fatalf("no allow_once option in %v", opts)
				}
				post("/api/permission", map[string]string{"id": id, "option": option})
				answered = true
			case "done":
				if !answered {
					t.Errorf("the turn ended without the permission dialog")
				}
				if !strings.Contains(text.String(), FinalText) {
					t.Errorf("streamed text %q lacks the mock's final text", text.String())
				}
				waitFile(t, filepath.Join(work, "out1.txt"), "hi\n")
				return
			case "error":
				t.Fatalf("turn failed: %v", ev)
			}
		case <-deadline:
			t.Fatalf("no end of the turn within %v (text so far %q)", turnTimeout, text.String())
		}
	}
}
