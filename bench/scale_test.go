package bench

// Scale benchmarks: what a host pays per agent and per session, whether
// throughput holds with many agents streaming at once, and whether memory
// stays flat over churn. They measure and report; they never fail on a
// number. Each does its work once per b.N (run them with -benchtime 1x).
//
//	go test -run '^$' -bench Scale -benchtime 1x -timeout 30m
//
// ACPHOST_SCALE_AGENTS (default 1000) sets the number of agent processes,
// ACPHOST_SCALE_SESSIONS (default 10) the sessions per process of
// BenchmarkScaleSessions, ACPHOST_SOAK (default 20s) the soak's length.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
)

var (
	floodBinOnce sync.Once
	floodBin     string
	floodBinErr  error
)

// floodAgent builds floodagent once per test binary.
func floodAgent(tb testing.TB) string {
	floodBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "acphost-scale")
		if err != nil {
			floodBinErr = err
			return
		}
		floodBin = filepath.Join(dir, "floodagent")
		out, err := exec.Command("go", "build", "-o", floodBin, "./floodagent").CombinedOutput()
		if err != nil {
			floodBinErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if floodBinErr != nil {
		tb.Fatal(floodBinErr)
	}
	return floodBin
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// footprint is what the process holds: OS threads, goroutines, live heap
// (after two GCs) and RSS.
type footprint struct {
	threads, goroutines int
	heap, rss           float64 // bytes
}

func measure() footprint {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return footprint{
		threads:    statusField("Threads"),
		goroutines: runtime.NumGoroutine(),
		heap:       float64(ms.HeapAlloc),
		rss:        float64(statusField("VmRSS")) * 1024,
	}
}

// statusField reads a number from /proc/self/status (kB for sizes).
func statusField(name string) int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[0])
				return n
			}
		}
	}
	return 0
}

// report puts what n more agents (or sessions) cost, per one, into b.
func report(b *testing.B, unit string, n int, before, after footprint) {
	per := func(x, y float64) float64 { return (y - x) / float64(n) }
	b.ReportMetric(float64(n), unit+"s")
	b.ReportMetric(float64(after.threads), "threads")
	b.ReportMetric(per(float64(before.threads), float64(after.threads)), "threads/"+unit)
	b.ReportMetric(per(float64(before.goroutines), float64(after.goroutines)), "goroutines/"+unit)
	b.ReportMetric(per(before.heap, after.heap)/1024, "heap-KiB/"+unit)
	b.ReportMetric(per(before.rss, after.rss)/1024, "rss-KiB/"+unit)
	b.ReportMetric(after.rss/(1<<20), "rss-MiB")
}

// startAgents starts n warm clients over floodagent processes, 32 at a
// time. It returns how many started and the first error.
func startAgents(tb testing.TB, n int, opts acphost.ACPOptions) ([]*acphost.ACPClient, error) {
	opts.Command = floodAgent(tb)
	cs := make([]*acphost.ACPClient, n)
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range cs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := acphost.Start(ctx, opts)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			cs[i] = c
		}()
	}
	wg.Wait()
	cs = slices.DeleteFunc(cs, func(c *acphost.ACPClient) bool { return c == nil })
	return cs, firstErr
}

// closeAll closes the clients in parallel and reports how long it took.
func closeAll(cs []*acphost.ACPClient) time.Duration {
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() { c.Close() })
	}
	wg.Wait()
	return time.Since(t0)
}

// BenchmarkScaleIdleAgents starts ACPHOST_SCALE_AGENTS warm clients (one
// floodagent process each, from Start) and reports what each idle one
// holds: OS threads, goroutines, live heap and RSS, and the time to close
// them all.
func BenchmarkScaleIdleAgents(b *testing.B) {
	n := envInt("ACPHOST_SCALE_AGENTS", 1000)
	for b.Loop() {
		before := measure()
		t0 := time.Now()
		cs, err := startAgents(b, n, acphost.ACPOptions{})
		started := time.Since(t0)
		if err != nil {
			b.Logf("%d of %d started; first error: %v", len(cs), n, err)
		}
		after := measure()
		report(b, "agent", len(cs), before, after)
		b.ReportMetric(started.Seconds()*1e3/float64(len(cs)), "start-ms/agent")
		b.ReportMetric(closeAll(cs).Seconds()*1e3, "close-all-ms")
	}
}

// BenchmarkScaleSessions opens ACPHOST_SCALE_AGENTS ×
// ACPHOST_SCALE_SESSIONS sessions through a Pool (SessionsPerProcess
// sessions per floodagent process) and reports what each idle session
// holds beyond its share of the processes.
func BenchmarkScaleSessions(b *testing.B) {
	procs := envInt("ACPHOST_SCALE_AGENTS", 1000)
	per := envInt("ACPHOST_SCALE_SESSIONS", 10)
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		before := measure()
		pool, err := acphost.NewPool(ctx, acphost.PoolOptions{
			Agent: acphost.ACPOptions{Command: floodAgent(b)},
			Min:   procs, Max: procs, SessionsPerProcess: per,
		})
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		warm := measure()
		sessions := make([]*acphost.Session, procs*per)
		var wg sync.WaitGroup
		var failed atomic.Int64
		sem := make(chan struct{}, 64)
		for i := range sessions {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				s, err := pool.NewSession(ctx, acphost.SessionOptions{})
				if err != nil {
					failed.Add(1)
					return
				}
				sessions[i] = s
			}()
		}
		wg.Wait()
		after := measure()
		open := len(sessions) - int(failed.Load())
		if failed.Load() > 0 {
			b.Logf("%d sessions failed to open", failed.Load())
		}
		report(b, "session", open, warm, after)
		b.ReportMetric((warm.heap-before.heap)/1024/float64(procs), "heap-KiB/process")
		b.ReportMetric(float64(warm.goroutines-before.goroutines)/float64(procs), "goroutines/process")
		t0 := time.Now()
		pool.Close()
		b.ReportMetric(time.Since(t0).Seconds()*1e3, "close-all-ms")
		cancel()
	}
}

// BenchmarkScaleStreaming runs one turn of 2,000 chunks on each of
// ACPHOST_SCALE_AGENTS agents at once and reports the aggregate rate
// against one agent alone doing the same number of turns in a row. It
// then streams paced chunks (1 per ACPHOST_SCALE_INTERVAL, default 10 ms,
// so that a sweep finds where the delay starts to rise) from every agent at once, each
// stamped by the agent as it wrote it, and reports the p50/p99 delay from
// the agent's write to OnUpdate (the pipe, the read loop, the queue and
// the dispatcher, under the load of all the others).
func BenchmarkScaleStreaming(b *testing.B) {
	n := envInt("ACPHOST_SCALE_AGENTS", 1000)
	const chunks = 2000
	var delays struct {
		sync.Mutex
		d []time.Duration
	}
	var measuring atomic.Bool
	opts := acphost.ACPOptions{OnUpdate: func(u acp.Update) {
		if !measuring.Load() {
			return
		}
		m, ok := u.(*acp.MessageChunk)
		if !ok || len(m.Content.Text) < 19 {
			return
		}
		ns, err := strconv.ParseInt(m.Content.Text[:19], 10, 64)
		if err != nil {
			return
		}
		d := time.Since(time.Unix(0, ns))
		delays.Lock()
		delays.d = append(delays.d, d)
		delays.Unlock()
	}}
	for b.Loop() {
		cs, err := startAgents(b, n, opts)
		if err != nil {
			b.Logf("%d of %d started; first error: %v", len(cs), n, err)
		}
		prompt := fmt.Sprintf("n=%d size=64", chunks)
		turn := func(c *acphost.ACPClient) {
			if _, err := c.Generate(acphost.Request{Prompt: prompt}); err != nil {
				b.Error(err)
			}
		}
		// One agent alone, as many chunks in a row (at most 50 turns).
		alone := min(len(cs), 50)
		t0 := time.Now()
		for range alone {
			turn(cs[0])
		}
		aloneRate := float64(alone*chunks) / time.Since(t0).Seconds()
		// All at once.
		var wg sync.WaitGroup
		t0 = time.Now()
		for _, c := range cs {
			wg.Go(func() { turn(c) })
		}
		wg.Wait()
		allRate := float64(len(cs)*chunks) / time.Since(t0).Seconds()
		b.ReportMetric(float64(len(cs)), "agents")
		b.ReportMetric(aloneRate, "updates/s-alone")
		b.ReportMetric(allRate, "updates/s-all")
		b.ReportMetric(allRate/aloneRate, "all/alone")
		// Paced and stamped, all at once: 100 chunks, 1 per interval each.
		interval := os.Getenv("ACPHOST_SCALE_INTERVAL")
		if _, err := time.ParseDuration(interval); err != nil {
			interval = "10ms"
		}
		measuring.Store(true)
		for _, c := range cs {
			wg.Go(func() {
				if _, err := c.Generate(acphost.Request{Prompt: "n=100 size=64 interval=" + interval + " stamp=1"}); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		measuring.Store(false)
		delays.Lock()
		d := delays.d
		delays.d = nil
		delays.Unlock()
		slices.Sort(d)
		if len(d) > 0 {
			b.ReportMetric(float64(d[len(d)/2].Microseconds()), "delay-p50-µs")
			b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "delay-p99-µs")
			b.ReportMetric(float64(d[len(d)-1].Microseconds()), "delay-max-µs")
		}
		closeAll(cs)
	}
}

// BenchmarkScaleSoak churns for ACPHOST_SOAK: a pool growing from 2 to
// 24 processes and shrinking back (IdleTimeout), sessions opened, given a
// turn and closed, and agents crashing mid-turn (crash=1) and restarted by
// Recover. It reports the live heap, goroutines and processes after a
// warm-up and at the end, once the pool has shrunk to Min again.
func BenchmarkScaleSoak(b *testing.B) {
	length := 20 * time.Second
	if d, err := time.ParseDuration(os.Getenv("ACPHOST_SOAK")); err == nil && d > 0 {
		length = d
	}
	for b.Loop() {
		ctx := context.Background()
		pool, err := acphost.NewPool(ctx, acphost.PoolOptions{
			Agent: acphost.ACPOptions{
				Command: floodAgent(b),
				Recover: &acphost.RecoverOptions{MaxRestarts: 1 << 20, Backoff: time.Millisecond},
			},
			Min: 2, Max: 24, SessionsPerProcess: 2, IdleTimeout: 200 * time.Millisecond,
		})
		if err != nil {
			b.Fatal(err)
		}
		var turns, crashes, opened, failures, collateral atomic.Int64
		var firstErr atomic.Value
		fail := func(err error) {
			failures.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
		}
		round := func(i int, crash bool) {
			s, err := pool.NewSession(ctx, acphost.SessionOptions{})
			if err != nil {
				fail(err)
				return
			}
			opened.Add(1)
			defer s.Close(ctx)
			for j := range 5 {
				prompt := "n=50 size=64 perm=1"
				if crash && j == 2 {
					prompt = "crash=1"
					crashes.Add(1)
				}
				if _, err := s.Generate(acphost.Request{Prompt: prompt}); err == nil {
					turns.Add(1)
				} else if !crash || j != 2 {
					// A turn of another session on the process that
					// crashed fails with the crash; its next one restarts.
					var re *acphost.RestartError
					switch {
					case errors.As(err, &re):
					case errors.Is(err, acphost.ErrAgentExited):
						collateral.Add(1)
					default:
						fail(err)
					}
				}
			}
		}
		// Bursts of 20 concurrent conversations (the pool grows), then a
		// pause (it shrinks); every 7th conversation crashes its agent.
		burst := func(k int) {
			var wg sync.WaitGroup
			for i := range 20 {
				wg.Go(func() { round(i, (k*20+i)%7 == 0) })
			}
			wg.Wait()
			time.Sleep(300 * time.Millisecond)
		}
		for k := range 3 {
			burst(k)
		}
		start := measure()
		startProcs := pool.Processes()
		end := time.Now().Add(length)
		bursts := 0
		for k := 3; time.Now().Before(end); k++ {
			burst(k)
			bursts++
		}
		time.Sleep(500 * time.Millisecond) // let the pool shrink to Min
		final := measure()
		b.ReportMetric(float64(bursts), "bursts")
		b.ReportMetric(float64(opened.Load()), "sessions")
		b.ReportMetric(float64(turns.Load()), "turns")
		b.ReportMetric(float64(crashes.Load()), "crashes")
		b.ReportMetric(float64(failures.Load()), "failures")
		b.ReportMetric(float64(collateral.Load()), "crashed-turns-of-a-neighbour")
		if e := firstErr.Load(); e != nil {
			b.Logf("first failure: %s", e)
		}
		b.ReportMetric(start.heap/1024, "heap-KiB-start")
		b.ReportMetric(final.heap/1024, "heap-KiB-end")
		b.ReportMetric(float64(start.goroutines), "goroutines-start")
		b.ReportMetric(float64(final.goroutines), "goroutines-end")
		b.ReportMetric(float64(startProcs), "procs-start")
		b.ReportMetric(float64(pool.Processes()), "procs-end")
		b.ReportMetric(final.rss/(1<<20), "rss-MiB-end")
		pool.Close()
	}
}
