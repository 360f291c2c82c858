package hosttools_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

// The environment that makes the test binary the client of
// TestAttackAnotherUserWithTheToken: it calls the tool at the endpoint
// with the token, prints what came back, and exits.
const (
	envCallURL  = "HOSTTOOLS_TEST_CALL_URL"
	envCallAuth = "HOSTTOOLS_TEST_CALL_AUTH"
)

// callAsClient is the test binary as another user's client: one
// tools/call of "echo" with the token. It prints "status N" when the
// endpoint answered, "refused: …" when it did not.
func callAsClient(url, auth string) int {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"from another user"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", auth)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		fmt.Println("refused:", err)
		return 0
	}
	resp.Body.Close()
	fmt.Println("status", resp.StatusCode)
	return 0
}

// clientMain runs the binary as callAsClient when the environment says.
func clientMain() (code int, ran bool) {
	url := os.Getenv(envCallURL)
	if url == "" {
		return 0, false
	}
	return callAsClient(url, os.Getenv(envCallAuth)), true
}
