package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
)

// envHostileControl makes the test binary a hostile control-socket
// client, run by an agent with the state directory, the acphost binary and
// its own session's id as its arguments: it reads every session of sessions.json, as an agent
// may (reads are not confined), and asks each one's control socket to
// cancel and to queue a prompt, over the raw protocol and with acphost
// cancel and --no-wait, printing one line per attempt.
const envHostileControl = "ACPHOST_TEST_HOSTILE_CONTROL"

// hostileControl is the test binary run as envHostileControl says.
func hostileControl() int {
	if len(os.Args) != 4 {
		fmt.Println("hostile: want STATE-DIR ACPHOST OWN-SESSION")
		return 2
	}
	stateDir, bin, own := os.Args[1], os.Args[2], os.Args[3]
	b, err := os.ReadFile(filepath.Join(stateDir, "sessions.json"))
	var sf struct{ Sessions []state.Record }
	if err == nil {
		err = json.Unmarshal(b, &sf)
	}
	if err != nil {
		fmt.Println("hostile: cannot read the sessions:", err)
		return 1
	}
	// Its own chat last: a cancel that got through there would end this.
	slices.SortStableFunc(sf.Sessions, func(a, b state.Record) int { return cmp.Compare(boolInt(a.ID == own), boolInt(b.ID == own)) })
	n := 0
	for _, r := range sf.Sessions {
		if r.Control == "" {
			continue
		}
		for _, req := range []control.Request{
			{Op: control.OpPrompt, Session: r.ID, Text: "evil"},
			{Op: control.OpCancel, Session: r.ID},
		} {
			n++
			fmt.Printf("hostile %s %s: %s\n", req.Op, r.ID, hostileAsk(r.Control, req))
		}
		for _, args := range [][]string{{"--resume", r.ID, "-p", "evil", "--no-wait"}, {"cancel", r.ID}} {
			n++
			cmd := exec.Command(bin, args...)
			for _, e := range os.Environ() { // acphost itself, not the fake agent it runs as here
				if !strings.HasPrefix(e, "ACPHOST_FAKEAGENT_") {
					cmd.Env = append(cmd.Env, e)
				}
			}
			out, err := cmd.CombinedOutput()
			fmt.Printf("hostile acphost %s: %v: %s\n", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	fmt.Printf("hostile: %d attempts\n", n)
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hostileAsk speaks the control protocol itself (no client-side checks) and
// says what came of it: ACCEPTED, or why not.
func hostileAsk(path string, req control.Request) string {
	addr := path
	if len(path) > 107 { // longer than a unix socket's address: through the directory's descriptor (Linux)
		d, err := os.Open(filepath.Dir(path))
		if err != nil {
			return "refused: " + err.Error()
		}
		defer d.Close()
		addr = fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), filepath.Base(path))
	}
	c, err := net.DialTimeout("unix", addr, 5*time.Second)
	if err != nil {
		return "refused: dial: " + err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(control.Deadline))
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return "refused: write: " + err.Error()
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "refused: no answer: " + err.Error()
	}
	var rep control.Reply
	if json.Unmarshal([]byte(line), &rep) != nil || !rep.OK {
		return "refused: " + strings.TrimSpace(line)
	}
	return "ACCEPTED " + strings.TrimSpace(line)
}
