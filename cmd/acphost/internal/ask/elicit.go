package ask

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// The --elicit policies.
const (
	ElicitAsk     = "ask"
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// The answers that end a form early, typed at any field.
const (
	keyDecline = "!decline"
	keyCancel  = "!cancel"
)

// Elicitor answers the agent's elicitations by the --elicit policy; with
// "ask" it shows the form and reads one field at a time from stdin.
type Elicitor struct {
	Policy string
	Auto   bool              // the policy is the default, not chosen: say so when declining
	Values map[string]string // --elicit-value, for "accept"
	JSON   bool              // --json: nothing is read from stdin
	In     *tty.Inbox
	Scr    *tty.Screen   // questions: stdout, or stderr with --json
	Errs   *tty.Screen   // notes
	Echo   bool          // echo answers (stdin is not a terminal)
	Asking chan struct{} // the one seat at stdin, shared with the Approver
}

// Answer is the ACPOptions.Elicitation.OnRequest of every policy.
func (e *Elicitor) Answer(ctx context.Context, req *acp.ElicitationRequest) (acphost.ElicitationAnswer, error) {
	switch e.Policy {
	case ElicitAsk:
		return e.ask(ctx, req)
	case ElicitAccept:
		content, err := e.preset(req)
		return acphost.ElicitationAnswer{Action: acp.ElicitAccept, Content: content}, err
	case ElicitCancel:
		return acphost.ElicitationAnswer{Action: acp.ElicitCancel}, nil
	}
	if e.Auto {
		why := "standard input is not a terminal: declined (--elicit ask answers from it)"
		if e.JSON {
			why = "--json reads nothing: declined (see --elicit)"
		}
		e.Errs.Line(tty.StyleYellow, "acphost: the agent asks for input ("+tty.OneLine(acp.SafeText(req.Message), 60)+"); "+why)
	}
	return acphost.ElicitationAnswer{Action: acp.ElicitDecline}, nil
}

// preset is the content --elicit accept sends: each field's default, then
// the --elicit-value of fields this form has. The library validates it
// (a required field left empty answers cancel, with the reason).
func (e *Elicitor) preset(req *acp.ElicitationRequest) (map[string]any, error) {
	if req.Form == nil {
		return nil, nil
	}
	content := map[string]any{}
	for _, f := range req.Form.Fields {
		if f.Default != nil {
			content[f.Name] = f.Default
		}
	}
	for name, text := range e.Values {
		f := req.Form.Field(name)
		if f == nil {
			continue
		}
		v, err := parseValue(f, text)
		if err != nil {
			return nil, fmt.Errorf("--elicit-value %s: %s", name, err)
		}
		content[name] = v
	}
	return content, nil
}

// ask shows the request and reads the answer. Only one question at a
// time reads stdin (permissions included).
func (e *Elicitor) ask(ctx context.Context, req *acp.ElicitationRequest) (acphost.ElicitationAnswer, error) {
	if _, err := acquire(ctx, e.Asking); err != nil {
		return acphost.ElicitationAnswer{}, err
	}
	defer func() { <-e.Asking }()
	e.Scr.SetPaused(true)
	defer e.Scr.SetPaused(false)
	e.Scr.Block(FormatElicitation(e.Scr, req, true))
	switch {
	case req.Mode == acp.ModeURL:
		return e.askURL(ctx)
	case req.Form == nil:
		e.Scr.Line(tty.StyleYellow, "this kind of question cannot be answered here: cancelling")
		return acphost.ElicitationAnswer{Action: acp.ElicitCancel}, nil
	}
	for {
		content := map[string]any{}
		for i := range req.Form.Fields {
			f := &req.Form.Fields[i]
			v, set, end, err := e.askField(ctx, f)
			if err != nil || end != "" {
				return acphost.ElicitationAnswer{Action: end}, err
			}
			if set {
				content[f.Name] = v
			}
		}
		_, err := req.Form.Validate(content)
		if err == nil {
			return acphost.ElicitationAnswer{Action: acp.ElicitAccept, Content: content}, nil
		}
		e.Scr.Line(tty.StyleYellow, tty.ErrMsg(err)+": once more")
	}
}

// askField reads one field until the answer fits it. set is false for an
// optional field left empty; end is decline or cancel when the user ended
// the form.
func (e *Elicitor) askField(ctx context.Context, f *acp.FormField) (v any, set bool, end acp.ElicitationAction, err error) {
	if d := tty.OneLine(acp.SafeText(f.Description), 200); d != "" {
		e.Scr.Line(tty.StyleDim, d)
	}
	if f.Kind == acp.FormOther {
		if f.Required {
			e.Scr.Line(tty.StyleYellow, fieldTitle(f)+": a "+acp.SafeText(f.Type)+" field cannot be answered here: cancelling")
			return nil, false, acp.ElicitCancel, nil
		}
		e.Scr.Line(tty.StyleDim, fieldTitle(f)+": a "+acp.SafeText(f.Type)+" field cannot be answered here: left out")
		return nil, false, "", nil
	}
	if f.Kind == acp.FormEnum || f.Kind == acp.FormMultiSelect {
		e.Scr.Block(formatChoices(e.Scr, f))
	}
	question := e.Scr.Style(tty.StyleAsk, fieldQuestion(f))
	for {
		e.Scr.Prompt(question)
		line, ok, err := e.In.Ask(ctx)
		switch {
		case err != nil: // cancelled, withdrawn or closed: answered already
			e.Scr.Unprompt()
			return nil, false, "", err
		case !ok:
			e.Scr.BreakLine()
			e.Scr.Line(tty.StyleYellow, "no more input: cancelling")
			return nil, false, acp.ElicitCancel, nil
		}
		{
			e.Scr.Answered(acp.SafeText(line), e.Echo)
			s := strings.TrimSpace(line)
			switch s {
			case keyDecline:
				return nil, false, acp.ElicitDecline, nil
			case keyCancel:
				return nil, false, acp.ElicitCancel, nil
			case "":
				if f.Default != nil {
					return f.Default, true, "", nil
				}
				if !f.Required {
					return nil, false, "", nil
				}
				e.Scr.Line(tty.StyleYellow, "required: type an answer ("+keyDecline+" declines, "+keyCancel+" dismisses)")
				continue
			}
			v, err := parseValue(f, s)
			if err == nil {
				err = checkField(f, v)
			}
			if err == nil {
				return v, true, "", nil
			}
			e.Scr.Line(tty.StyleYellow, err.Error())
		}
	}
}

// askURL asks for consent to a URL elicitation shown already.
func (e *Elicitor) askURL(ctx context.Context) (acphost.ElicitationAnswer, error) {
	question := e.Scr.Style(tty.StyleAsk, "y: accept (open it yourself), n: decline, c: cancel:")
	for {
		e.Scr.Prompt(question)
		line, ok, err := e.In.Ask(ctx)
		switch {
		case err != nil:
			e.Scr.Unprompt()
			return acphost.ElicitationAnswer{}, err
		case !ok:
			e.Scr.BreakLine()
			e.Scr.Line(tty.StyleYellow, "no more input: cancelling")
			return acphost.ElicitationAnswer{Action: acp.ElicitCancel}, nil
		}
		{
			e.Scr.Answered(acp.SafeText(line), e.Echo)
			switch strings.ToLower(strings.TrimSpace(line)) {
			case "y", "yes":
				return acphost.ElicitationAnswer{Action: acp.ElicitAccept}, nil
			case "n", "no", keyDecline:
				return acphost.ElicitationAnswer{Action: acp.ElicitDecline}, nil
			case "c", keyCancel:
				return acphost.ElicitationAnswer{Action: acp.ElicitCancel}, nil
			}
			e.Scr.Line(tty.StyleYellow, fmt.Sprintf("%q is not y, n or c", tty.OneLine(acp.SafeText(line), 40)))
		}
	}
}

// acquire takes the one seat at stdin, reporting whether it had to wait.
func acquire(ctx context.Context, seat chan struct{}) (waited bool, err error) {
	select {
	case seat <- struct{}{}:
		return false, nil
	default:
	}
	select {
	case seat <- struct{}{}:
		return true, nil
	case <-ctx.Done():
		return true, ctx.Err()
	}
}

// parseValue reads what a person typed for a field: text as is; a choice
// by number or value; a number; y/n; choices separated by commas.
func parseValue(f *acp.FormField, s string) (any, error) {
	s = strings.TrimSpace(s)
	shown := tty.OneLine(acp.SafeText(s), 40)
	switch f.Kind {
	case acp.FormString:
		return s, nil
	case acp.FormEnum:
		if v, ok := pickChoice(f, s); ok {
			return v, nil
		}
		return nil, fmt.Errorf("%q is not a choice (1-%d)", shown, len(f.Choices))
	case acp.FormMultiSelect:
		var vs []string
		for _, part := range strings.Split(s, ",") {
			v, ok := pickChoice(f, strings.TrimSpace(part))
			if !ok {
				return nil, fmt.Errorf("%q is not a choice (1-%d)", tty.OneLine(acp.SafeText(part), 40), len(f.Choices))
			}
			vs = append(vs, v)
		}
		return vs, nil
	case acp.FormNumber:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", shown)
		}
		return n, nil
	case acp.FormInteger:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", shown)
		}
		return n, nil
	case acp.FormBoolean:
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not y or n", shown)
	}
	return nil, fmt.Errorf("a %s field cannot be answered", acp.SafeText(f.Type))
}

// pickChoice maps a number (1-based) or a choice's value to its value.
func pickChoice(f *acp.FormField, s string) (string, bool) {
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.Choices) {
		return f.Choices[n-1].Value, true
	}
	for _, c := range f.Choices {
		if c.Value == s {
			return c.Value, true
		}
	}
	return "", false
}

// checkField validates one value with the library's own rules (length,
// range, pattern, format, items).
func checkField(f *acp.FormField, v any) error {
	one := acp.FormSchema{Fields: []acp.FormField{*f}}
	_, err := one.Validate(map[string]any{f.Name: v})
	var ce *acp.FormContentError
	if errors.As(err, &ce) {
		return errors.New(acp.SafeText(ce.Msg))
	}
	return err
}

// fieldTitle is what a person reads for a field: its title, else its name.
func fieldTitle(f *acp.FormField) string {
	if t := tty.OneLine(acp.SafeText(f.Title), 80); t != "" {
		return t
	}
	return tty.OneLine(acp.SafeText(f.Name), 80)
}

// fieldQuestion is "How many (integer, 1 to 10; Enter: 3):".
func fieldQuestion(f *acp.FormField) string {
	hints := fieldHints(f)
	enter := ""
	switch {
	case f.Default != nil:
		enter = "Enter: " + showValue(f, f.Default)
	case !f.Required:
		enter = "Enter: skip"
	}
	switch {
	case len(hints) > 0 && enter != "":
		return fieldTitle(f) + " (" + strings.Join(hints, ", ") + "; " + enter + "):"
	case len(hints) > 0:
		return fieldTitle(f) + " (" + strings.Join(hints, ", ") + "):"
	case enter != "":
		return fieldTitle(f) + " (" + enter + "):"
	}
	return fieldTitle(f) + ":"
}

// fieldHints say what a field takes: required, its type and bounds.
func fieldHints(f *acp.FormField) []string {
	var h []string
	if f.Required {
		h = append(h, "required")
	}
	switch f.Kind {
	case acp.FormString:
		if b := bounds(f.MinLength, f.MaxLength); b != "" {
			h = append(h, b+" characters")
		}
		if f.Format != "" {
			h = append(h, acp.SafeText(f.Format))
		}
	case acp.FormNumber, acp.FormInteger:
		h = append(h, string(f.Kind))
		if b := numBounds(f.Minimum, f.Maximum); b != "" {
			h = append(h, b)
		}
	case acp.FormBoolean:
		h = append(h, "y/n")
	case acp.FormMultiSelect:
		h = append(h, "numbers separated by commas")
		if b := bounds(f.MinItems, f.MaxItems); b != "" {
			h = append(h, b+" choices")
		}
	}
	return h
}

func bounds(lo, hi *int) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("%d to %d", *lo, *hi)
	case lo != nil:
		return fmt.Sprintf("at least %d", *lo)
	case hi != nil:
		return fmt.Sprintf("at most %d", *hi)
	}
	return ""
}

func numBounds(lo, hi *float64) string {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch {
	case lo != nil && hi != nil:
		return g(*lo) + " to " + g(*hi)
	case lo != nil:
		return "at least " + g(*lo)
	case hi != nil:
		return "at most " + g(*hi)
	}
	return ""
}

// showValue renders a field's value for a person: a choice by its title.
func showValue(f *acp.FormField, v any) string {
	title := func(s string) string {
		if f != nil {
			for _, c := range f.Choices {
				if c.Value == s {
					return tty.OneLine(acp.SafeText(c.Title), 60)
				}
			}
		}
		return tty.OneLine(acp.SafeText(s), 60)
	}
	switch v := v.(type) {
	case string:
		return title(v)
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = title(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return acp.SafeText(fmt.Sprint(v))
}

// formatChoices lists an enum's choices, numbered, the default marked.
func formatChoices(s *tty.Screen, f *acp.FormField) string {
	var b strings.Builder
	for i, c := range f.Choices {
		line := fmt.Sprintf("  %s %s", s.Style(tty.StyleBold, strconv.Itoa(i+1)+")"), tty.OneLine(acp.SafeText(c.Title), 80))
		if isDefault(f, c.Value) {
			line += s.Style(tty.StyleDim, " (default)")
		}
		if d := tty.OneLine(acp.SafeText(c.Description), 120); d != "" {
			line += s.Style(tty.StyleDim, " — "+d)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func isDefault(f *acp.FormField, value string) bool {
	switch d := f.Default.(type) {
	case string:
		return d == value
	case []string:
		for _, v := range d {
			if v == value {
				return true
			}
		}
	}
	return false
}

// FormatElicitation renders a request: the message, then the form's title
// and description (and, unless asking, its fields), or the URL and its
// host. Every agent string goes through acphost.SafeText.
func FormatElicitation(s *tty.Screen, req *acp.ElicitationRequest, asking bool) string {
	var b strings.Builder
	writeHeading(&b, s, "? Question: ", req.Message, "The agent asks for input")
	switch {
	case req.Mode == acp.ModeURL:
		b.WriteString("  open: " + acp.SafeText(req.URL) + "\n")
		if u, err := url.Parse(req.URL); err == nil {
			b.WriteString("  host: " + s.Style(tty.StyleBold, acp.SafeText(u.Host)) + "\n")
		}
		if asking {
			b.WriteString(s.Style(tty.StyleDim, "  acphost does not open it: open it yourself if you trust the host") + "\n")
		}
	case req.Form != nil:
		if t := tty.OneLine(acp.SafeText(req.Form.Title), 120); t != "" {
			b.WriteString("  " + s.Style(tty.StyleBold, t) + "\n")
		}
		if d := strings.TrimSpace(acp.SafeText(req.Form.Description)); d != "" {
			for _, l := range capLines(strings.Split(d, "\n"), maxContentLines) {
				b.WriteString("  " + l + "\n")
			}
		}
		if asking {
			b.WriteString(s.Style(tty.StyleDim, "  one field at a time; Enter takes the default, "+keyDecline+" declines, "+keyCancel+" dismisses") + "\n")
			break
		}
		for i := range req.Form.Fields {
			f := &req.Form.Fields[i]
			hints := fieldHints(f)
			if f.Default != nil {
				hints = append(hints, "default: "+showValue(f, f.Default))
			}
			line := fieldTitle(f)
			if len(hints) > 0 {
				line += " (" + strings.Join(hints, ", ") + ")"
			}
			b.WriteString("  - " + line + "\n")
		}
	}
	return b.String()
}

// FormatElicitationAnswer is "→ accepted: name=Ada, count=4", "→ declined
// · --elicit decline", …
func FormatElicitationAnswer(s *tty.Screen, policy string, ev acphost.StreamEvent) string {
	a := ev.ElicitationAnswer
	if a == nil {
		return ""
	}
	var text, code string
	switch a.Action {
	case acp.ElicitAccept:
		text, code = "→ accepted", tty.StyleGreen
		if req := ev.Elicitation; req != nil && req.Form != nil && len(a.Content) > 0 {
			var parts []string
			for i := range req.Form.Fields {
				f := &req.Form.Fields[i]
				if v, ok := a.Content[f.Name]; ok {
					parts = append(parts, tty.OneLine(acp.SafeText(f.Name), 40)+"="+showRaw(v))
				}
			}
			text += ": " + tty.OneLine(strings.Join(parts, ", "), 400)
		}
	case acp.ElicitDecline:
		text, code = "→ declined", tty.StyleRed
	default:
		text, code = "→ cancelled", tty.StyleYellow
	}
	switch a.Reason {
	case acphost.ReasonHook:
		if policy != ElicitAsk {
			text += " · --elicit " + policy
		}
	default:
		text += ReasonNote(a.Reason, a.Err)
	}
	return "  " + s.Style(code, text)
}

// showRaw renders a value as sent (a choice by its value).
func showRaw(v any) string {
	switch v := v.(type) {
	case bool:
		return strconv.FormatBool(v)
	case []string:
		return "[" + tty.OneLine(acp.SafeText(strings.Join(v, ", ")), 200) + "]"
	}
	return showValue(nil, v)
}

// URLHost is the host of a URL elicitation, for the completion line.
func URLHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return acp.SafeText(u.Host)
}
