package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/acphost/acphost/bench/clients"
)

// row is one line of the table: one metric of one workload.
type row struct {
	workload string
	metric   string
	label    string
	unit     string
	// higher is true when a higher value is better.
	higher bool
	// limitTarget and sdkTarget bound acphost/limit and acphost/SDK; zero
	// means no target. For higher-is-better rows the ratio must be at least
	// the target, otherwise at most.
	limitTarget, sdkTarget float64
	note                   string
}

func rows(sz sizes) []row {
	return []row{
		{workload: "throughput", metric: "updates_per_s", label: fmt.Sprintf("Throughput: 1 turn × %s chunks of 64 B", thousands(sz.burst)), unit: "updates/s", higher: true, limitTarget: 0.5, sdkTarget: 3, note: "limit ≥ 0.5× (aim 0.7×), SDK ≥ 3×"},
		{workload: "throughput", metric: "allocs_per_update", label: "  allocations per update (burst)", unit: "allocs"},
		{workload: "throughput", metric: "bytes_per_update", label: "  bytes allocated per update (burst)", unit: "B", limitTarget: 2, note: "≤ 2× limit"},
		{workload: "throughput", metric: "cpu_us_per_update", label: "  client CPU per update (burst)", unit: "µs"},
		{workload: "escaped", metric: "updates_per_s", label: "Throughput, same burst, text with \\n \\t \\\" in every chunk", unit: "updates/s", higher: true, limitTarget: 0.5, note: "limit ≥ 0.5×"},
		{workload: "escaped", metric: "allocs_per_update", label: "  allocations per update", unit: "allocs"},
		{workload: "reordered", metric: "updates_per_s", label: "Throughput, same burst, envelope keys params-first", unit: "updates/s", higher: true, limitTarget: 0.5, note: "limit ≥ 0.5×"},
		{workload: "reordered", metric: "allocs_per_update", label: "  allocations per update", unit: "allocs"},
		{workload: "small", metric: "updates_per_s", label: fmt.Sprintf("Throughput: %d turns × %s chunks of 64 B", sz.smallTurns, thousands(sz.smallChunks)), unit: "updates/s", higher: true, limitTarget: 0.5, sdkTarget: 3, note: "limit ≥ 0.5×, SDK ≥ 3×"},
		{workload: "small", metric: "allocs_per_update", label: "  allocations per update", unit: "allocs"},
		{workload: "small", metric: "cpu_us_per_update", label: "  client CPU per update", unit: "µs"},
		{workload: "latency", metric: "turn_us_median", label: fmt.Sprintf("Latency: %s trivial turns, per turn (median)", thousands(sz.latTurns)), unit: "µs", limitTarget: 1.3, note: "≤ 1.3× limit"},
		{workload: "latency", metric: "turn_us_p99", label: "  per turn, p99", unit: "µs"},
		{workload: "latency", metric: "allocs_per_turn", label: "  allocations per turn", unit: "allocs"},
		{workload: "latency", metric: "cpu_us_per_turn", label: "  client CPU per turn", unit: "µs"},
		{workload: "permission", metric: "turn_us_median", label: fmt.Sprintf("Permission: %s turns × 1 request, per turn (median)", thousands(sz.permTurns)), unit: "µs", limitTarget: 1.3, note: "≤ 1.3× limit"},
		{workload: "permission", metric: "perm_rtt_us_median", label: "  round trip seen by the agent (median)", unit: "µs", limitTarget: 1.3, note: "≤ 1.3× limit"},
		{workload: "permission", metric: "allocs_per_turn", label: "  allocations per turn", unit: "allocs"},
		{workload: "permission", metric: "cpu_us_per_turn", label: "  client CPU per turn", unit: "µs"},
		{workload: "cancel-paced", metric: "cancel_to_return_ms", label: "Cancel, paced turn (1 chunk/ms): cancel → call returns", unit: "ms"},
		{workload: "cancel-paced", metric: "cancel_to_agent_answer_ms", label: "  cancel → agent's answer written", unit: "ms"},
		{workload: "cancel-paced", metric: "agent_answer_to_return_ms", label: "  agent's answer → call returns", unit: "ms"},
		{workload: "cancel-flood", metric: "cancel_to_return_ms", label: "Cancel, flooding turn: cancel → call returns", unit: "ms"},
		{workload: "cancel-flood", metric: "cancel_to_agent_recv_ms", label: "  cancel → agent reads session/cancel", unit: "ms"},
		{workload: "cancel-flood", metric: "cancel_to_agent_answer_ms", label: "  cancel → agent's answer written", unit: "ms"},
		{workload: "cancel-flood", metric: "agent_answer_to_return_ms", label: "  agent's answer → call returns", unit: "ms"},
		{workload: "cancel-slow", metric: "cancel_to_return_ms", label: fmt.Sprintf("Cancel, flooding turn, slow consumer (%v per update): cancel → call returns", sz.slowSpin), unit: "ms"},
		{workload: "cancel-slow", metric: "agent_answer_to_return_ms", label: "  agent's answer → call returns", unit: "ms"},
		{workload: "coldstart", metric: "start_ms", label: "Cold start: spawn + initialize + session/new", unit: "ms"},
		{workload: "coldstart", metric: "process_startup_ms", label: "  the process's own start-up (spawn → first line)", unit: "ms"},
		{workload: "memory", metric: "heap_mb_end", label: fmt.Sprintf("Memory: live heap after %s updates (%s turns)", thousands(sz.memTurns*(sz.memChunks+1)), thousands(sz.memTurns)), unit: "MiB"},
		{workload: "memory", metric: "heap_growth_kb", label: fmt.Sprintf("  live heap growth, turn %d → %s", sz.memTurns/100, thousands(sz.memTurns)), unit: "KiB"},
		{workload: "memory", metric: "heap_b_per_turn_2nd_half", label: fmt.Sprintf("  live heap growth per turn, turn %s → %s", thousands(sz.memTurns/2), thousands(sz.memTurns)), unit: "B/turn", note: "flat (≤ 64 B/turn)"},
		{workload: "memory", metric: "rss_mb_end", label: "  RSS at the end", unit: "MiB"},
		{workload: "memory", metric: "rss_mb_peak", label: "  peak RSS", unit: "MiB"},
		{workload: "memory-open", metric: "heap_growth_kb", label: fmt.Sprintf("Memory, tool calls never finished (1 per turn): live heap growth, turn %d → %s", sz.memTurns/100, thousands(sz.memTurns)), unit: "KiB"},
		{workload: "memory-open", metric: "heap_b_per_turn_2nd_half", label: fmt.Sprintf("  live heap growth per turn, turn %s → %s", thousands(sz.memTurns/2), thousands(sz.memTurns)), unit: "B/turn", note: "flat (≤ 64 B/turn)"},
		{workload: "slow", metric: "updates_per_s", label: fmt.Sprintf("Slow consumer (%v per update): 1 turn × %s chunks", sz.slowSpin, thousands(sz.slowChunks)), unit: "updates/s", higher: true, note: "must not fail"},
	}
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// cell is the aggregate of one client's runs of one workload.
type cell struct {
	ok, runs int
	errs     []string
	metrics  map[string][]float64
}

func (c *cell) median(metric string) (float64, bool) {
	xs := c.metrics[metric]
	if len(xs) == 0 {
		return 0, false
	}
	return median(xs), true
}

func aggregate(all []result) map[[2]string]*cell {
	cells := map[[2]string]*cell{}
	for _, r := range all {
		k := [2]string{r.Workload, r.Client}
		c := cells[k]
		if c == nil {
			c = &cell{metrics: map[string][]float64{}}
			cells[k] = c
		}
		c.runs++
		if !r.OK {
			c.errs = append(c.errs, r.Err)
			continue
		}
		c.ok++
		for m, v := range r.Metrics {
			c.metrics[m] = append(c.metrics[m], v)
		}
	}
	return cells
}

func format(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100_000:
		return thousands(int(math.Round(v)))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func printTable(w io.Writer, all []result, names, cl []string, runs int, sz sizes, took time.Duration) {
	cells := aggregate(all)
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	fmt.Fprintf(w, "Medians of %d runs per client (clients in rotating order, a fresh process each). %s, %d CPUs, %s. Took %s.\n\n",
		runs, runtime.Version(), runtime.NumCPU(), runtime.GOARCH, took.Round(time.Second))
	fmt.Fprintln(w, "| Workload | Unit | acphost | SDK v0.13.0 | limit | acphost/limit | acphost/SDK | Target | Met |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
	var failures []string
	for _, r := range rows(sz) {
		if !want[r.workload] {
			continue
		}
		vals := map[string]float64{}
		have := map[string]bool{}
		text := map[string]string{}
		for _, c := range []string{clients.ACPHost, clients.SDK, clients.Limit} {
			ce := cells[[2]string{r.workload, c}]
			switch {
			case !slices.Contains(cl, c) || ce == nil:
				text[c] = "–"
			case ce.ok == 0:
				text[c] = fmt.Sprintf("**FAIL** (%d/%d)", len(ce.errs), ce.runs)
				failures = append(failures, fmt.Sprintf("%s / %s: %s", r.workload, c, firstLine(ce.errs[0])))
			default:
				v, ok := ce.median(r.metric)
				if !ok {
					text[c] = "n/a"
					break
				}
				vals[c], have[c] = v, true
				text[c] = format(v)
				if len(ce.errs) > 0 {
					text[c] += fmt.Sprintf(" (%d/%d failed)", len(ce.errs), ce.runs)
					failures = append(failures, fmt.Sprintf("%s / %s: %s", r.workload, c, firstLine(ce.errs[0])))
				}
			}
		}
		ratio := func(other string) (float64, string) {
			if !have[clients.ACPHost] || !have[other] || vals[other] == 0 {
				return 0, "–"
			}
			q := vals[clients.ACPHost] / vals[other]
			return q, fmt.Sprintf("%.2f×", q)
		}
		ql, qlText := ratio(clients.Limit)
		qs, qsText := ratio(clients.SDK)
		met := verdict(r, ql, qlText != "–", qs, qsText != "–", cells, vals, have)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.label, r.unit, text[clients.ACPHost], text[clients.SDK], text[clients.Limit], qlText, qsText, r.note, met)
	}
	if len(failures) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Failures (first error of each):")
		fmt.Fprintln(w)
		seen := map[string]bool{}
		for _, f := range failures {
			if !seen[f] {
				seen[f] = true
				fmt.Fprintln(w, "- "+f)
			}
		}
	}
}

// verdict says whether acphost met the row's targets.
func verdict(r row, ql float64, hasL bool, qs float64, hasS bool, cells map[[2]string]*cell, vals map[string]float64, have map[string]bool) string {
	meets := func(q, target float64) bool {
		if r.higher {
			return q >= target
		}
		return q <= target
	}
	var parts []string
	if r.workload == "slow" || (r.metric == "updates_per_s" && r.workload != "small") {
		if ce := cells[[2]string{r.workload, clients.ACPHost}]; ce != nil && len(ce.errs) > 0 {
			return "❌ acphost failed"
		}
	}
	if r.metric == "heap_b_per_turn_2nd_half" && have[clients.ACPHost] {
		if vals[clients.ACPHost] <= 64 {
			return "✅"
		}
		return "❌"
	}
	if r.limitTarget > 0 && hasL {
		if meets(ql, r.limitTarget) {
			parts = append(parts, "✅ limit")
		} else {
			parts = append(parts, "❌ limit")
		}
	}
	if r.sdkTarget > 0 {
		switch {
		case hasS && meets(qs, r.sdkTarget):
			parts = append(parts, "✅ SDK")
		case hasS:
			parts = append(parts, "❌ SDK")
		case cells[[2]string{r.workload, clients.SDK}] != nil && cells[[2]string{r.workload, clients.SDK}].ok == 0 && have[clients.ACPHost]:
			parts = append(parts, "✅ SDK failed")
		}
	}
	if r.workload == "slow" && have[clients.ACPHost] {
		parts = append(parts, "✅ completed")
	}
	return strings.Join(parts, ", ")
}
