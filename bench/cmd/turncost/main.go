// Command turncost measures what a turn costs the client: acphost against
// the floor (the limit client: one goroutine that writes the prompt and
// reads the lines in place until the answer, permissions answered
// inline), both driving the zero agent (bench/zero: precomputed bytes,
// one write per message, one goroutine), alternated in one run.
//
//	turncost [-rounds 7] [-turns 3000] [-workloads trivial,permission,stream]
//
// Every measurement runs in a fresh worker process (this binary with
// -worker) against a fresh agent (this binary with -serve), so CPU,
// allocation and scheduler figures belong to one client alone; the order
// of the clients alternates from round to round. The table gives medians
// over the rounds and acphost/floor ratios.
//
// Wake-ups are counted exactly, from the runtime's execution trace: after
// the timed turns, more turns run under runtime/trace with the garbage
// collector off, and `go tool trace -d=parsed` lists every goroutine
// state transition; a wake-up is a goroutine going Waiting->Runnable
// (readied by a channel, a lock, a timer or the poller), a goroutine
// started one going NotExist->Runnable. The tracer's own goroutine and the
// runtime's background workers are left out (recognised by their stacks).
// The timed turns run without the tracer.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/acphost/acphost/bench/internal/stats"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/acphost/acphost/bench/clients"
	"github.com/acphost/acphost/bench/zero"
)

// workloads are the prompts, in table order.
var workloads = []struct{ name, prompt, what string }{
	{"trivial", "n=0", "trivial turn (answered at once)"},
	{"permission", "n=1 perm=1", "permission turn (1 request, then 1 tool_call_update + 1 chunk)"},
	{"stream", "n=1000", "streamed turn (1,000 chunks of 64 B)"},
}

// clientNames are the two clients; the floor is the limit client.
var clientNames = []string{clients.ACPHost, clients.Limit}

func main() {
	serve := flag.Bool("serve", false, "play the zero agent on stdin/stdout (internal)")
	isWorker := flag.Bool("worker", false, "run one measurement, print it as JSON (internal)")
	client := flag.String("client", "", "worker: the client")
	workload := flag.String("workload", "", "worker: the workload")
	rounds := flag.Int("rounds", 7, "rounds; each measures every workload with both clients")
	turns := flag.Int("turns", 3000, "turns per measurement (stream: a tenth)")
	only := flag.String("workloads", "", "comma-separated workloads (default all)")
	jsonOut := flag.String("json", "", "write every measurement to this file")
	cpuProfile := flag.String("cpuprofile", "", "worker: write a CPU profile of the timed turns")
	flag.Parse()

	switch {
	case *serve:
		if err := zero.Serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "zero:", err)
			os.Exit(1)
		}
		return
	case *isWorker:
		m, err := measure(*client, *workload, *turns, *cpuProfile)
		out := result{Client: *client, Workload: *workload, Metrics: m}
		if err != nil {
			out.Err = err.Error()
		}
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
		return
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "turncost:", err)
		os.Exit(1)
	}
	names := []string{}
	for _, w := range workloads {
		if *only == "" || slices.Contains(strings.Split(*only, ","), w.name) {
			names = append(names, w.name)
		}
	}
	begin := time.Now()
	var all []result
	for r := 0; r < *rounds; r++ {
		for _, name := range names {
			for i := range clientNames {
				c := clientNames[(i+r)%len(clientNames)]
				res := spawn(self, c, name, *turns)
				res.Round = r
				status := "ok"
				if res.Err != "" {
					status = "FAILED: " + res.Err
				}
				fmt.Fprintf(os.Stderr, "round %d/%d %-10s %-8s %s\n", r+1, *rounds, name, c, status)
				all = append(all, res)
			}
		}
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(all, "", "  ")
		_ = os.WriteFile(*jsonOut, b, 0o644)
	}
	printTable(os.Stdout, all, names, *rounds, time.Since(begin))
}

type result struct {
	Client   string             `json:"client"`
	Workload string             `json:"workload"`
	Round    int                `json:"round"`
	Err      string             `json:"err,omitempty"`
	Metrics  map[string]float64 `json:"metrics"`
}

func spawn(self, client, workload string, turns int) result {
	cmd := exec.Command(self, "-worker", "-client", client, "-workload", workload, "-turns", fmt.Sprint(turns))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	res := result{Client: client, Workload: workload}
	err := cmd.Run()
	if jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); jerr != nil {
		res.Err = fmt.Sprintf("worker: %v; %s", err, strings.TrimSpace(stderr.String()))
	}
	return res
}

// counters are the process's cumulative figures.
type counters struct {
	cpu     time.Duration
	bytes   uint64
	mallocs uint64
	at      time.Time
}

func read() counters {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	c := counters{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), bytes: ms.TotalAlloc, mallocs: ms.Mallocs, at: time.Now()}
	return c
}

// measure starts the client against a zero agent, warms it up, and runs
// the workload's turns.
func measure(client, workload string, turns int, cpuProfile string) (map[string]float64, error) {
	var prompt string
	for _, w := range workloads {
		if w.name == workload {
			prompt = w.prompt
		}
	}
	if prompt == "" {
		return nil, fmt.Errorf("unknown workload %q", workload)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c, err := clients.Start(ctx, client, clients.Options{Agent: self, Args: []string{"-serve"}})
	cancel()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	plan, _ := zero.ParsePlan(prompt)
	perTurnUpdates := int64(plan.N)
	if plan.Perm {
		perTurnUpdates++ // the tool_call_update
	}
	if workload == "stream" {
		turns = max(turns/10, 1)
	}
	bg := context.Background()
	for range max(turns/10, 50) { // warm-up: caches, pools, idle brokers
		if _, err := c.Turn(bg, prompt); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	runtime.GC()
	lat := make([]float64, turns)
	var updates int64
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
	}
	before := read()
	for i := range turns {
		t0 := time.Now()
		res, err := c.Turn(bg, prompt)
		lat[i] = float64(time.Since(t0).Nanoseconds()) / 1e3
		if err != nil {
			return nil, fmt.Errorf("turn %d: %w", i+1, err)
		}
		updates += res.Updates
	}
	after := read()
	if cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if updates != perTurnUpdates*int64(turns) {
		return nil, fmt.Errorf("%d updates, want %d", updates, perTurnUpdates*int64(turns))
	}
	n := float64(turns)
	m := map[string]float64{
		"wall_us":          median(lat),
		"wall_mean_us":     float64(after.at.Sub(before.at).Nanoseconds()) / 1e3 / n,
		"cpu_us":           float64((after.cpu - before.cpu).Nanoseconds()) / 1e3 / n,
		"bytes_per_turn":   float64(after.bytes-before.bytes) / n,
		"allocs_per_turn":  float64(after.mallocs-before.mallocs) / n,
		"bytes_per_update": 0,
	}
	if updates > 0 {
		m["bytes_per_update"] = float64(after.bytes-before.bytes) / float64(updates)
	}
	traced := max(turns/3, 10)
	wake, started, err := traceTurns(traced, func() error {
		_, err := c.Turn(bg, prompt)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("traced turns: %w", err)
	}
	m["wakeups"], m["goroutines_new"] = float64(wake)/float64(traced), float64(started)/float64(traced)
	return m, nil
}

// traceTurns runs turn n times under the execution tracer, the garbage
// collector off, and counts the goroutines woken and started (see the
// package doc).
func traceTurns(n int, turn func() error) (wakeups, started int, err error) {
	dir, err := os.MkdirTemp("", "turncost")
	if err != nil {
		return 0, 0, err
	}
	if os.Getenv("TURNCOST_KEEP") == "" {
		defer os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, "trace kept in", dir)
	}
	file := filepath.Join(dir, "trace.out")
	f, err := os.Create(file)
	if err != nil {
		return 0, 0, err
	}
	gc := debug.SetGCPercent(-1)
	if err := trace.Start(f); err != nil {
		f.Close()
		return 0, 0, err
	}
	for range n {
		if err = turn(); err != nil {
			break
		}
	}
	trace.Stop()
	debug.SetGCPercent(gc)
	f.Close()
	if err != nil {
		return 0, 0, err
	}
	return countTrace(file)
}

var transition = regexp.MustCompile(`StateTransition .*GoID=(\d+) (\w+)->(\w+)`)

// countTrace counts Waiting->Runnable and NotExist->Runnable transitions
// in a trace, leaving out the goroutines whose stacks show the tracer or
// the runtime's background work.
func countTrace(file string) (wakeups, started int, err error) {
	cmd := exec.Command("go", "tool", "trace", "-d=parsed", file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	wakes, starts := map[string]int{}, map[string]int{}
	excluded := map[string]bool{}
	last := ""
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := transition.FindStringSubmatch(line); m != nil {
			last = m[1]
			switch {
			case m[2] == "Waiting" && m[3] == "Runnable":
				wakes[m[1]]++
			case m[2] == "NotExist" && m[3] == "Runnable":
				starts[m[1]]++
			}
			continue
		}
		if strings.HasPrefix(line, "M=") {
			last = ""
			continue
		}
		if last != "" && (strings.Contains(line, "runtime/trace.") || strings.Contains(line, "runtime.ReadTrace") ||
			strings.Contains(line, "runtime.gcBgMarkWorker") || strings.Contains(line, "runtime.bgsweep") ||
			strings.Contains(line, "runtime.bgscavenge") || strings.Contains(line, "runtime.forcegchelper")) {
			excluded[last] = true
		}
	}
	if err := cmd.Wait(); err != nil {
		return 0, 0, fmt.Errorf("go tool trace: %w", err)
	}
	for g, n := range wakes {
		if !excluded[g] {
			wakeups += n
		}
	}
	for g, n := range starts {
		if !excluded[g] {
			started += n
		}
	}
	return wakeups, started, nil
}

var median = stats.Median

// rows are the table's lines: workload, metric, label, unit.
var rows = []struct{ workload, metric, label, format string }{
	{"trivial", "wall_us", "trivial turn, wall (median turn)", "%.1f µs"},
	{"trivial", "cpu_us", "trivial turn, client CPU", "%.1f µs"},
	{"trivial", "wakeups", "trivial turn, goroutine wake-ups", "%.2f"},
	{"trivial", "goroutines_new", "trivial turn, goroutines started", "%.2f"},
	{"trivial", "bytes_per_turn", "trivial turn, bytes allocated", "%.0f B"},
	{"permission", "wall_us", "permission turn, wall (median turn)", "%.1f µs"},
	{"permission", "cpu_us", "permission turn, client CPU", "%.1f µs"},
	{"permission", "wakeups", "permission turn, goroutine wake-ups", "%.2f"},
	{"permission", "goroutines_new", "permission turn, goroutines started", "%.2f"},
	{"permission", "bytes_per_turn", "permission turn, bytes allocated", "%.0f B"},
	{"stream", "wall_mean_us", "streamed turn of 1,000 chunks, wall", "%.0f µs"},
	{"stream", "cpu_us", "streamed turn of 1,000 chunks, client CPU", "%.0f µs"},
	{"stream", "wakeups", "streamed turn of 1,000 chunks, wake-ups", "%.1f"},
	{"stream", "bytes_per_update", "bytes allocated per streamed update", "%.0f B"},
}

func printTable(w io.Writer, all []result, names []string, rounds int, took time.Duration) {
	fmt.Fprintf(w, "| median of %d rounds | floor | acphost | acphost/floor |\n|---|---|---|---|\n", rounds)
	for _, r := range rows {
		if !slices.Contains(names, r.workload) {
			continue
		}
		var floor, host []float64
		failed := 0
		for _, res := range all {
			if res.Workload != r.workload {
				continue
			}
			if res.Err != "" {
				failed++
				continue
			}
			v := res.Metrics[r.metric]
			if res.Client == clients.Limit {
				floor = append(floor, v)
			} else {
				host = append(host, v)
			}
		}
		f, h := median(floor), median(host)
		ratio := "–"
		if f > 0 {
			ratio = fmt.Sprintf("%.2f×", h/f)
		}
		note := ""
		if failed > 0 {
			note = fmt.Sprintf(" (%d failed)", failed/2)
		}
		fmt.Fprintf(w, "| %s%s | "+r.format+" | "+r.format+" | %s |\n", r.label, note, f, h, ratio)
	}
	fmt.Fprintf(w, "\n%d rounds in %.0f s, clients alternated, GOMAXPROCS %d.\n", rounds, took.Seconds(), runtime.GOMAXPROCS(0))
}
