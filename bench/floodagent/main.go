// Command floodagent is a small ACP agent for benchmarks: see package
// github.com/acphost/acphost/bench/flood. Flags set the turn a prompt plays
// when its text overrides nothing.
//
//	floodagent [-n 1] [-size 64] [-perm] [-permdone=true] [-interval 0] [-forever] [-hello]
//
// -hello writes one line to stdout as soon as the process runs, before
// reading anything: the cold-start baseline measures spawn → that line.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/acphost/acphost/bench/flood"
)

func main() {
	cfg := flood.DefaultConfig()
	cfg.Exit = os.Exit
	flag.IntVar(&cfg.N, "n", cfg.N, "chunks per turn")
	flag.IntVar(&cfg.Size, "size", cfg.Size, "bytes of text per chunk")
	flag.BoolVar(&cfg.Perm, "perm", cfg.Perm, "one session/request_permission per turn")
	flag.BoolVar(&cfg.PermDone, "permdone", cfg.PermDone, "report the permission's tool call completed")
	flag.DurationVar(&cfg.Interval, "interval", cfg.Interval, "pause between chunks (each chunk flushed)")
	flag.BoolVar(&cfg.Forever, "forever", cfg.Forever, "stream until session/cancel")
	hello := flag.Bool("hello", false, "write a line at start-up (cold-start baseline)")
	flag.Parse()
	if *hello {
		os.Stdout.Write([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"_flood/hello\",\"params\":{}}\n"))
	}
	if err := flood.Serve(os.Stdin, os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "floodagent:", err)
		os.Exit(1)
	}
}
