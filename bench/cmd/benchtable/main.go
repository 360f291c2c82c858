// Command benchtable runs the acphost benchmarks and prints one markdown
// table.
//
// It runs every workload with every client (acphost, the Go SDK, the raw
// limit) several times, rotating the order of the clients from run to run.
// Each measurement runs in a fresh worker process (this binary with
// -worker) against a fresh floodagent subprocess, so heap and allocation
// counts belong to one client alone. The table shows medians over the runs.
//
//	benchtable -agent ./floodagent [-runs 5] [-quick] [-workloads a,b] [-clients a,b]
//		[-json out.json] [-profile dir] [-acphost-queue n]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/acphost/acphost/bench/clients"
)

func main() {
	agent := flag.String("agent", "", "path of the floodagent binary")
	runs := flag.Int("runs", 5, "runs of each workload per client")
	quick := flag.Bool("quick", false, "small sizes (a smoke run)")
	only := flag.String("workloads", "", "comma-separated workloads (default all)")
	clientList := flag.String("clients", strings.Join(clients.Names, ","), "comma-separated clients")
	jsonOut := flag.String("json", "", "write every run's result to this file")
	profileDir := flag.String("profile", "", "write CPU and allocation profiles of acphost's first run of each workload here")
	// Worker mode.
	isWorker := flag.Bool("worker", false, "run one measurement and print it as JSON (internal)")
	client := flag.String("client", "", "worker: the client")
	wl := flag.String("workload", "", "worker: the workload")
	run := flag.Int("run", 0, "worker: the run number")
	cpuProfile := flag.String("cpuprofile", "", "worker: write a CPU profile")
	memProfile := flag.String("memprofile", "", "worker: write an allocation profile")
	queue := flag.Int("acphost-queue", 0, "acphost's ACPOptions.Limits.MaxQueuedUpdates (0: its default)")
	flag.Parse()

	if *agent == "" {
		fmt.Fprintln(os.Stderr, "benchtable: -agent is required")
		os.Exit(2)
	}
	abs, err := filepath.Abs(*agent)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
	sz := fullSizes
	if *quick {
		sz = quickSizes
	}
	if *isWorker {
		os.Exit(workerMain(*client, *wl, *run, abs, sz, *queue, *cpuProfile, *memProfile))
	}

	names := workloadOrder
	if *only != "" {
		names = strings.Split(*only, ",")
		for _, n := range names {
			if workloads[n] == nil {
				fmt.Fprintln(os.Stderr, "benchtable: unknown workload", n)
				os.Exit(2)
			}
		}
	}
	cl := strings.Split(*clientList, ",")
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
	}
	begin := time.Now()
	var all []result
	for r := 0; r < *runs; r++ {
		for _, name := range names {
			for i := range cl {
				c := cl[(i+r)%len(cl)] // rotate the order every run
				var prof []string
				if *profileDir != "" && r == 0 && c == clients.ACPHost {
					prof = []string{
						"-cpuprofile", filepath.Join(*profileDir, name+".cpu.pprof"),
						"-memprofile", filepath.Join(*profileDir, name+".mem.pprof"),
					}
				}
				if *queue > 0 {
					prof = append(prof, "-acphost-queue", fmt.Sprint(*queue))
				}
				res := spawnWorker(self, abs, c, name, r, *quick, prof)
				status := "ok"
				if !res.OK {
					status = "FAILED: " + res.Err
				}
				fmt.Fprintf(os.Stderr, "run %d/%d %-13s %-8s %6.2fs %s\n", r+1, *runs, name, c, res.Seconds, firstLine(status))
				all = append(all, res)
			}
		}
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(all, "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
		}
	}
	printTable(os.Stdout, all, names, cl, *runs, sz, time.Since(begin))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// spawnWorker runs one measurement in a child process, killing it (and its
// process group) after 5 minutes.
func spawnWorker(self, agent, client, workload string, run int, quick bool, extra []string) result {
	args := []string{"-worker", "-agent", agent, "-client", client, "-workload", workload, "-run", fmt.Sprint(run)}
	if quick {
		args = append(args, "-quick")
	}
	args = append(args, extra...)
	cmd := exec.Command(self, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	res := result{Client: client, Workload: workload, Run: run}
	if err := cmd.Start(); err != nil {
		res.Err = err.Error()
		return res
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(5 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		werr = fmt.Errorf("worker timed out: %w", <-done)
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil {
		res.OK = false
		res.Err = fmt.Sprintf("worker: %v; stderr: %s", werr, tail(stderr.String(), 400))
	}
	res.Seconds = time.Since(start).Seconds()
	return res
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// workerMain runs one workload and prints its result as one JSON line.
func workerMain(client, name string, run int, agent string, sz sizes, queue int, cpuProfile, memProfile string) int {
	// The SDK logs connection diagnostics (and its overflow) to slog.Default.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	f := workloads[name]
	res := result{Client: client, Workload: name, Run: run}
	if f == nil {
		res.Err = "unknown workload " + name
	} else {
		if memProfile != "" {
			runtime.MemProfileRate = 4096
		}
		if cpuProfile != "" {
			if pf, err := os.Create(cpuProfile); err == nil {
				pprof.StartCPUProfile(pf)
				defer func() { pprof.StopCPUProfile(); pf.Close() }()
			}
		}
		w := &worker{client: client, agent: agent, sz: sz, queue: queue}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		go func() {
			<-ctx.Done()
			if ctx.Err() == context.DeadlineExceeded {
				fmt.Println(`{"ok":false,"err":"workload timed out in the worker"}`)
				os.Exit(1)
			}
		}()
		m, err := f(w)
		cancel()
		res.Metrics = m
		res.OK = err == nil
		if err != nil {
			res.Err = err.Error()
		}
		if memProfile != "" {
			if pf, err := os.Create(memProfile); err == nil {
				pprof.Lookup("allocs").WriteTo(pf, 0)
				pf.Close()
			}
		}
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	return 0
}
