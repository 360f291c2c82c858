package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/agents"
)

// systemPromptFlags are --system-prompt TEXT, --system-prompt-file FILE and
// --system-prompt-mode MODE, as given.
type systemPromptFlags struct {
	text, file, mode string
}

// register adds the three flags to fs, each described by help(name).
func (f *systemPromptFlags) register(fs *flag.FlagSet, help func(string) string) {
	fs.StringVar(&f.text, "system-prompt", "", help("system-prompt"))
	fs.StringVar(&f.file, "system-prompt-file", "", help("system-prompt-file"))
	fs.StringVar(&f.mode, "system-prompt-mode", "", help("system-prompt-mode"))
}

// webSystemPromptHelp describes the three flags in acphost web's usage.
func webSystemPromptHelp(name string) string {
	return map[string]string{
		"system-prompt":      "system-level instructions (`text`) for every session opened, for agents that take them",
		"system-prompt-file": "the --system-prompt text, read from `file`",
		"system-prompt-mode": "`mode` of the system prompt: append (default) or override",
	}[name]
}

// maxSystemPromptFile bounds what --system-prompt-file reads.
const maxSystemPromptFile = 1 << 20

// resolveSystemPrompt sets cfg.systemPrompt from the flags, else the named
// agent's systemPrompt in the config file, else the file's defaults; the
// mode flag applies to whichever text is used. cfg.systemPromptFrom names
// where it came from, for messages.
func resolveSystemPrompt(cfg *config, f systemPromptFlags, file agents.FileConfig) error {
	switch f.mode {
	case "", "append", "override":
	default:
		return fmt.Errorf("--system-prompt-mode %q: want append or override", f.mode)
	}
	text, mode, from := "", "", ""
	switch {
	case f.text != "" && f.file != "":
		return errors.New("--system-prompt and --system-prompt-file both give the system prompt; give one")
	case f.file != "":
		b, err := readBounded(f.file, maxSystemPromptFile)
		if err != nil {
			return fmt.Errorf("--system-prompt-file: %w", err)
		}
		text, from = string(b), "--system-prompt-file"
	case f.text != "":
		text, from = f.text, "--system-prompt"
	default:
		d := file.Defaults
		text, mode, from = d.SystemPrompt, d.SystemPromptMode, "the config file's defaults.systemPrompt"
		if cfg.agentName != "" && cfg.agentName != agents.Demo {
			if def, err := file.Lookup(cfg.agentName); err == nil && def.SystemPrompt != "" {
				text, mode, from = def.SystemPrompt, def.SystemPromptMode, "the config file's agents."+cfg.agentName+".systemPrompt"
			}
		}
	}
	if f.mode != "" {
		mode = f.mode
	}
	switch {
	case text == "" && f.file != "":
		return fmt.Errorf("--system-prompt-file %s: the file is empty", f.file)
	case text == "" && f.mode != "":
		return fmt.Errorf("--system-prompt-mode %s: give the system prompt with --system-prompt or --system-prompt-file", f.mode)
	case text == "":
		return nil
	}
	cfg.systemPrompt = acp.TextSystemPrompt(acp.SystemPromptMode(mode), text)
	cfg.systemPromptFrom = from
	return nil
}

// readBounded reads the file at path, refusing one over max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s is over %d KiB", path, max>>10)
	}
	return b, err
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// systemPromptHint says what to do about a system prompt the agent does not
// take, naming where it came from; "" for another error.
func systemPromptHint(cfg config, err error) string {
	var spe *acphost.SystemPromptError
	if !errors.As(err, &spe) {
		return ""
	}
	from := firstNonEmpty(cfg.systemPromptFrom, "the system prompt")
	switch {
	case spe.Err != nil:
		return from + ": the agent refused it; shorten or reword it, or leave it out"
	case len(spe.Modes) > 0:
		return from + ": this agent takes a system prompt in append mode only: --system-prompt-mode append"
	}
	return from + ": this agent does not take a system prompt; leave it out, or say it in the first prompt"
}
