package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/acphost/acphost/bench/internal/stats"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acphost/acphost/bench/clients"
)

// sizes scales the workloads; -quick shrinks them for a smoke run.
type sizes struct {
	burst       int // chunks in the throughput turn
	smallTurns  int // turns of smallChunks (the SDK-survivable throughput)
	smallChunks int
	latTurns    int
	permTurns   int
	cancels     int
	colds       int
	memTurns    int
	memChunks   int
	slowChunks  int
	slowSpin    time.Duration
}

var fullSizes = sizes{
	burst: 200_000, smallTurns: 200, smallChunks: 1_000,
	latTurns: 2_000, permTurns: 2_000, cancels: 20, colds: 20,
	memTurns: 1_000, memChunks: 1_000, slowChunks: 50_000, slowSpin: 10 * time.Microsecond,
}

var quickSizes = sizes{
	burst: 20_000, smallTurns: 20, smallChunks: 1_000,
	latTurns: 200, permTurns: 200, cancels: 5, colds: 5,
	memTurns: 100, memChunks: 1_000, slowChunks: 5_000, slowSpin: 10 * time.Microsecond,
}

// result is what one worker run reports.
type result struct {
	Client   string             `json:"client"`
	Workload string             `json:"workload"`
	Run      int                `json:"run"`
	OK       bool               `json:"ok"`
	Err      string             `json:"err,omitempty"`
	Metrics  map[string]float64 `json:"metrics"`
	Seconds  float64            `json:"seconds"`
}

// workload runs one measurement with one client in this process.
type workload func(w *worker) (map[string]float64, error)

var workloads = map[string]workload{
	"throughput":   (*worker).throughput,
	"escaped":      (*worker).escaped,
	"reordered":    (*worker).reordered,
	"small":        (*worker).small,
	"latency":      (*worker).latency,
	"permission":   (*worker).permission,
	"cancel-paced": (*worker).cancelPaced,
	"cancel-flood": (*worker).cancelFlood,
	"cancel-slow":  (*worker).cancelSlow,
	"coldstart":    (*worker).coldStart,
	"memory":       (*worker).memory,
	"memory-open":  (*worker).memoryOpen,
	"slow":         (*worker).slow,
}

// workloadOrder is the order of the table.
var workloadOrder = []string{"throughput", "escaped", "reordered", "small", "latency", "permission", "cancel-paced", "cancel-flood", "cancel-slow", "coldstart", "memory", "memory-open", "slow"}

type worker struct {
	client string
	agent  string
	sz     sizes
	queue  int // acphost's MaxQueuedUpdates (0: default)
}

func (w *worker) start(opts clients.Options) (clients.Client, error) {
	opts.Agent = w.agent
	opts.MaxQueuedUpdates = w.queue
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return clients.Start(ctx, w.client, opts)
}

// closeOrKill closes the client, or abandons it after 5 s: a client whose
// connection failed may not be able to close its agent (the SDK has no
// Close), and the worker process exits right after anyway.
func closeOrKill(c clients.Client) {
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// cpuTime is the user+system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func memStats() runtime.MemStats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// burst runs turns of chunks each and reports the rate and the
// allocations per update made by this process (the client).
func (w *worker) burst(turns, chunks int, spin time.Duration, extra string) (map[string]float64, error) {
	c, err := w.start(clients.Options{Spin: spin})
	if err != nil {
		return nil, err
	}
	defer closeOrKill(c)
	prompt := fmt.Sprintf("n=%d size=64 %s", chunks, extra)
	// One warm-up turn, not counted.
	if _, err := c.Turn(context.Background(), "n=100 size=64"); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	runtime.GC()
	before := memStats()
	cpu0 := cpuTime()
	start := time.Now()
	var got int64
	for i := 0; i < turns; i++ {
		res, err := c.Turn(context.Background(), prompt)
		got += res.Updates
		if err != nil {
			return nil, fmt.Errorf("turn %d after %d of %d updates: %w", i+1, got, turns*chunks, err)
		}
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	after := memStats()
	total := float64(turns * chunks)
	if got != int64(turns*chunks) {
		return nil, fmt.Errorf("got %d updates, want %d", got, turns*chunks)
	}
	return map[string]float64{
		"updates_per_s":     total / elapsed.Seconds(),
		"mb_per_s":          total * 64 / 1e6 / elapsed.Seconds(),
		"allocs_per_update": float64(after.Mallocs-before.Mallocs) / total,
		"bytes_per_update":  float64(after.TotalAlloc-before.TotalAlloc) / total,
		"gc_cycles":         float64(after.NumGC - before.NumGC),
		"cpu_us_per_update": float64(cpu) / 1e3 / total,
		"elapsed_ms":        float64(elapsed) / 1e6,
	}, nil
}

func (w *worker) throughput() (map[string]float64, error) { return w.burst(1, w.sz.burst, 0, "") }

// escaped is the burst with a newline, a tab and a quote in every chunk.
func (w *worker) escaped() (map[string]float64, error) {
	return w.burst(1, w.sz.burst, 0, "escape=1")
}

// reordered is the burst with the envelope's keys in another order
// (params first): valid JSON-RPC that a byte-prefix match does not take.
func (w *worker) reordered() (map[string]float64, error) {
	return w.burst(1, w.sz.burst, 0, "layout=params-first")
}

func (w *worker) small() (map[string]float64, error) {
	return w.burst(w.sz.smallTurns, w.sz.smallChunks, 0, "")
}

func (w *worker) slow() (map[string]float64, error) {
	return w.burst(1, w.sz.slowChunks, w.sz.slowSpin, "")
}

var median = stats.Median

func percentile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(p * float64(len(s)-1))
	return s[i]
}

// turns runs n turns of prompt, timing each.
func (w *worker) turns(n int, prompt string, wantUpdates int64) (map[string]float64, error) {
	c, err := w.start(clients.Options{})
	if err != nil {
		return nil, err
	}
	defer closeOrKill(c)
	for i := 0; i < 50; i++ { // warm-up
		if _, err := c.Turn(context.Background(), prompt); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	runtime.GC()
	before := memStats()
	per := make([]float64, 0, n)
	rtts := make([]float64, 0, n)
	cpu0 := cpuTime()
	start := time.Now()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		res, err := c.Turn(context.Background(), prompt)
		per = append(per, float64(time.Since(t0))/1e3)
		if err != nil {
			return nil, fmt.Errorf("turn %d: %w", i+1, err)
		}
		if res.StopReason != "end_turn" || res.Updates != wantUpdates {
			return nil, fmt.Errorf("turn %d: stop %q, %d updates", i+1, res.StopReason, res.Updates)
		}
		if res.HasMeta && res.Meta.PermRTTNanos > 0 {
			rtts = append(rtts, float64(res.Meta.PermRTTNanos)/1e3)
		}
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	after := memStats()
	m := map[string]float64{
		"cpu_us_per_turn": float64(cpu) / 1e3 / float64(n),
		"turn_us_median":  median(per),
		"turn_us_p99":     percentile(per, 0.99),
		"turn_us_mean":    float64(elapsed) / 1e3 / float64(n),
		"allocs_per_turn": float64(after.Mallocs-before.Mallocs) / float64(n),
		"bytes_per_turn":  float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
	}
	if len(rtts) > 0 {
		m["perm_rtt_us_median"] = median(rtts)
	}
	return m, nil
}

func (w *worker) latency() (map[string]float64, error) {
	return w.turns(w.sz.latTurns, "n=0", 0)
}

func (w *worker) permission() (map[string]float64, error) {
	// One permission request, then the tool call reported completed.
	return w.turns(w.sz.permTurns, "n=0 perm=1", 1)
}

// cancel starts long turns and cancels each after a while.
func (w *worker) cancel(prompt string, after time.Duration, spin time.Duration) (map[string]float64, error) {
	c, err := w.start(clients.Options{Spin: spin})
	if err != nil {
		return nil, err
	}
	defer closeOrKill(c)
	var toReturn, toAnswer, answerToReturn, cancelToRecv []float64
	for i := 0; i < w.sz.cancels; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		type out struct {
			res clients.Result
			err error
			at  time.Time
		}
		done := make(chan out, 1)
		go func() {
			res, err := c.Turn(ctx, prompt)
			done <- out{res, err, time.Now()}
		}()
		time.Sleep(after)
		t0 := time.Now()
		cancel()
		var o out
		select {
		case o = <-done:
		case <-time.After(30 * time.Second):
			return nil, errors.New("a cancelled turn did not return within 30 s")
		}
		if o.err != nil && !errors.Is(o.err, context.Canceled) {
			return nil, fmt.Errorf("cancel %d: %w", i+1, o.err)
		}
		toReturn = append(toReturn, float64(o.at.Sub(t0))/1e6)
		if o.res.HasMeta && o.res.Meta.CancelRecvUnixMicro > 0 {
			ans := o.res.Meta.AnswerUnixMicro
			toAnswer = append(toAnswer, float64(ans-t0.UnixMicro())/1e3)
			answerToReturn = append(answerToReturn, float64(o.at.UnixMicro()-ans)/1e3)
			cancelToRecv = append(cancelToRecv, float64(o.res.Meta.CancelRecvUnixMicro-t0.UnixMicro())/1e3)
		}
		if w.client == clients.SDK {
			// The SDK returns at once and drops the agent's answer; give
			// the agent time to finish the turn before the next one.
			time.Sleep(50 * time.Millisecond)
		}
	}
	m := map[string]float64{"cancel_to_return_ms": median(toReturn)}
	if len(toAnswer) > 0 {
		m["cancel_to_agent_answer_ms"] = median(toAnswer)
		m["agent_answer_to_return_ms"] = median(answerToReturn)
		m["cancel_to_agent_recv_ms"] = median(cancelToRecv)
	}
	return m, nil
}

func (w *worker) cancelPaced() (map[string]float64, error) {
	return w.cancel("forever=1 interval=1ms size=64", 50*time.Millisecond, 0)
}

func (w *worker) cancelFlood() (map[string]float64, error) {
	return w.cancel("forever=1 size=64", 50*time.Millisecond, 0)
}

// cancelSlow is cancelFlood with a slow consumer (slowSpin per update):
// whatever the client has buffered must be delivered before it returns.
func (w *worker) cancelSlow() (map[string]float64, error) {
	return w.cancel("forever=1 size=64", 50*time.Millisecond, w.sz.slowSpin)
}

// coldStart times Start (spawn + initialize + session/new), and spawn →
// the agent's first line (-hello) as the process's own start-up.
func (w *worker) coldStart() (map[string]float64, error) {
	var start, proc []float64
	for i := 0; i < w.sz.colds; i++ {
		t0 := time.Now()
		c, err := w.start(clients.Options{})
		if err != nil {
			return nil, err
		}
		start = append(start, float64(time.Since(t0))/1e6)
		closeOrKill(c)

		d, err := helloTime(w.agent)
		if err != nil {
			return nil, err
		}
		proc = append(proc, float64(d)/1e6)
	}
	return map[string]float64{"start_ms": median(start), "process_startup_ms": median(proc)}, nil
}

// helloTime spawns floodagent -hello and times spawn → its first line.
func helloTime(agent string) (time.Duration, error) {
	cmd := exec.Command(agent, "-hello")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	_, err = bufio.NewReader(stdout).ReadSlice('\n')
	d := time.Since(t0)
	stdin.Close()
	cmd.Wait()
	return d, err
}

// memory runs memTurns turns of memChunks chunks and one permission each,
// and samples the live heap (after GC) and RSS.
func (w *worker) memory() (map[string]float64, error) {
	return w.memoryOf(fmt.Sprintf("n=%d size=64 perm=1", w.sz.memChunks), w.sz.memChunks+1)
}

// memoryOpen is memory with tool calls that never finish: the agent asks
// permission for a call and never reports it completed or failed (as after
// a rejection, or a cancelled turn).
func (w *worker) memoryOpen() (map[string]float64, error) {
	return w.memoryOf("n=10 size=64 perm=1 permdone=0", 10)
}

func (w *worker) memoryOf(prompt string, perTurn int) (map[string]float64, error) {
	c, err := w.start(clients.Options{})
	if err != nil {
		return nil, err
	}
	defer closeOrKill(c)
	m := map[string]float64{}
	sample := func(tag string) {
		runtime.GC()
		runtime.GC()
		ms := memStats()
		m["heap_mb_"+tag] = float64(ms.HeapAlloc) / (1 << 20)
		m["rss_mb_"+tag] = rssMB("VmRSS")
		m["goroutines_"+tag] = float64(runtime.NumGoroutine())
	}
	early := w.sz.memTurns / 100
	for i := 1; i <= w.sz.memTurns; i++ {
		res, err := c.Turn(context.Background(), prompt)
		if err != nil {
			return nil, fmt.Errorf("turn %d: %w", i, err)
		}
		if res.Updates != int64(perTurn) {
			return nil, fmt.Errorf("turn %d: %d updates", i, res.Updates)
		}
		if i == early {
			sample("early")
		}
		if i == w.sz.memTurns/2 {
			sample("mid")
		}
	}
	sample("end")
	m["heap_b_per_turn_2nd_half"] = (m["heap_mb_end"] - m["heap_mb_mid"]) * (1 << 20) / float64(w.sz.memTurns-w.sz.memTurns/2)
	m["rss_mb_peak"] = rssMB("VmHWM")
	m["heap_growth_kb"] = (m["heap_mb_end"] - m["heap_mb_early"]) * 1024
	m["updates"] = float64(w.sz.memTurns * perTurn)
	return m, nil
}

// rssMB reads a field of /proc/self/status in MB.
func rssMB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}
