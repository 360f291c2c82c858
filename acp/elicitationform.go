package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"regexp"
	"sort"
	"time"
	"unicode/utf8"
)

// FormFieldKind is what a form field asks for.
type FormFieldKind string

// The kinds of form fields. FormEnum is a string with a fixed set of
// Choices; FormMultiSelect an array of such strings; FormOther a type this
// client does not know (see FormField.Type and Raw): no answer may set it.
const (
	FormString      FormFieldKind = "string"
	FormEnum        FormFieldKind = "enum"
	FormNumber      FormFieldKind = "number"
	FormInteger     FormFieldKind = "integer"
	FormBoolean     FormFieldKind = "boolean"
	FormMultiSelect FormFieldKind = "multi_select"
	FormOther       FormFieldKind = "other"
)

// FormChoice is one allowed value of an enum or multi-select field.
type FormChoice struct {
	// Value is what the answer carries; Title what a person reads (Value
	// when the agent sent a bare enum). Both are the agent's: show them
	// through SafeText.
	Value, Title, Description string
}

// FormField is one property of a requested schema.
type FormField struct {
	Name string
	Kind FormFieldKind
	// Type is the property's "type" as sent.
	Type               string
	Title, Description string
	Required           bool
	// Default is the declared default, typed by Kind (string, float64,
	// int64, bool or []string); nil when absent or of the wrong type.
	Default any
	// Choices are an enum's or multi-select's allowed values, in order.
	Choices []FormChoice
	// MinLength and MaxLength bound a string's length in characters;
	// Minimum and Maximum a number; MinItems and MaxItems a multi-select.
	// Nil: no bound.
	MinLength, MaxLength *int
	Minimum, Maximum     *float64
	MinItems, MaxItems   *int
	// Pattern is a string's regular expression as sent; Format one of
	// "email", "uri", "date", "date-time" (others are kept, not checked).
	Pattern, Format string
	// Raw is the property's schema as received.
	Raw json.RawMessage
}

// FormSchema is a form elicitation's requested schema.
type FormSchema struct {
	Title, Description string
	// Fields are the properties in the order the agent sent them.
	Fields []FormField
	// Raw is the schema as received.
	Raw json.RawMessage
}

// Field returns the field with this name, or nil.
func (f *FormSchema) Field(name string) *FormField {
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
	}
	return nil
}

type wireChoice struct {
	Const       *string `json:"const"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
}

type wireProperty struct {
	Type        string          `json:"type"`
	Title       json.RawMessage `json:"title"`
	Description json.RawMessage `json:"description"`
	Default     json.RawMessage `json:"default"`
	Enum        []string        `json:"enum"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []wireChoice    `json:"oneOf"`
	MinLength   *uint32         `json:"minLength"`
	MaxLength   *uint32         `json:"maxLength"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	MinItems    *uint32         `json:"minItems"`
	MaxItems    *uint32         `json:"maxItems"`
	Pattern     string          `json:"pattern"`
	Format      string          `json:"format"`
	Items       *struct {
		Enum  []string     `json:"enum"`
		AnyOf []wireChoice `json:"anyOf"`
	} `json:"items"`
}

// ParseFormSchema decodes a requested schema: an object schema (a missing
// "type" means object) whose properties are flat primitives, enums or
// multi-selects. A schema of another type, with duplicate property names,
// a required name that is not a property, or a property whose
// constraints do not decode, is an error; an unknown property type is kept
// as FormOther.
func ParseFormSchema(raw json.RawMessage) (*FormSchema, error) {
	var w struct {
		Type        string          `json:"type"`
		Title       json.RawMessage `json:"title"`
		Description json.RawMessage `json:"description"`
		Properties  json.RawMessage `json:"properties"`
		Required    []string        `json:"required"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("requestedSchema: %w", err)
	}
	if w.Type != "object" && w.Type != "" { // absent means object, as in the Rust schema
		return nil, fmt.Errorf("requestedSchema: type %q, want \"object\"", w.Type)
	}
	f := &FormSchema{Title: optString(w.Title), Description: optString(w.Description), Raw: raw}
	props, err := orderedObject(w.Properties)
	if err != nil {
		return nil, fmt.Errorf("requestedSchema.properties: %w", err)
	}
	for _, p := range props {
		field, err := parseField(p.name, p.value)
		if err != nil {
			return nil, fmt.Errorf("requestedSchema.properties[%q]: %w", p.name, err)
		}
		f.Fields = append(f.Fields, field)
	}
	for _, name := range w.Required {
		fld := f.Field(name)
		if fld == nil {
			return nil, fmt.Errorf("requestedSchema.required names %q, which is not a property", name)
		}
		fld.Required = true
	}
	return f, nil
}

// optString reads an optional string, ignoring one of another type.
func optString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

type member struct {
	name  string
	value json.RawMessage
}

// orderedObject reads a JSON object's members in order, refusing
// duplicates; null or absent is empty.
func orderedObject(raw json.RawMessage) ([]member, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		if seen[name] {
			return nil, fmt.Errorf("duplicate property %q", name)
		}
		seen[name] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{name, v})
	}
	return out, nil
}

func parseField(name string, raw json.RawMessage) (FormField, error) {
	var w wireProperty
	if err := json.Unmarshal(raw, &w); err != nil {
		return FormField{}, err
	}
	f := FormField{Name: name, Type: w.Type, Title: optString(w.Title), Description: optString(w.Description), Pattern: w.Pattern, Format: w.Format, Raw: raw,
		MinLength: optInt(w.MinLength), MaxLength: optInt(w.MaxLength), MinItems: optInt(w.MinItems), MaxItems: optInt(w.MaxItems), Minimum: w.Minimum, Maximum: w.Maximum}
	switch w.Type {
	case "string":
		f.Kind = FormString
		f.Choices = choices(w.Enum, w.EnumNames, w.OneOf)
		if f.Choices != nil {
			f.Kind = FormEnum
		}
		f.Default = typedDefault[string](w.Default)
	case "number":
		f.Kind = FormNumber
		f.Default = typedDefault[float64](w.Default)
	case "integer":
		f.Kind = FormInteger
		if d, ok := typedDefault[float64](w.Default).(float64); ok && d == math.Trunc(d) && math.Abs(d) < 1<<53 {
			f.Default = int64(d)
		}
	case "boolean":
		f.Kind = FormBoolean
		f.Default = typedDefault[bool](w.Default)
	case "array":
		f.Kind = FormOther
		if w.Items != nil {
			if f.Choices = choices(w.Items.Enum, nil, w.Items.AnyOf); f.Choices != nil {
				f.Kind = FormMultiSelect
				f.Default = typedDefault[[]string](w.Default)
			}
		}
	default:
		f.Kind = FormOther
	}
	return f, nil
}

func optInt(v *uint32) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

// typedDefault decodes a default of type T, or returns nil.
func typedDefault[T any](raw json.RawMessage) any {
	var v T
	if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// choices reads titled choices (oneOf/anyOf const+title) or a bare enum
// (titled by the legacy enumNames when it matches); nil if neither.
func choices(enum, names []string, titled []wireChoice) []FormChoice {
	var out []FormChoice
	for _, c := range titled {
		if c.Const == nil {
			continue
		}
		title := c.Title
		if title == "" {
			title = *c.Const
		}
		out = append(out, FormChoice{Value: *c.Const, Title: title, Description: c.Description})
	}
	if out != nil {
		return out
	}
	for i, v := range enum {
		title := v
		if len(names) == len(enum) {
			title = names[i]
		}
		out = append(out, FormChoice{Value: v, Title: title})
	}
	return out
}

// Validate checks accepted content against the schema and returns it in
// wire form: every name a field, every required field present, each value
// of its field's type (string, a number type, bool, []string) within its
// bounds, choices, pattern and format. Fields of kind FormOther cannot be
// answered.
func (f *FormSchema) Validate(content map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(content))
	names := make([]string, 0, len(content))
	for name := range content {
		names = append(names, name)
	}
	sort.Strings(names) // the first error is the same every time
	for _, name := range names {
		fld := f.Field(name)
		if fld == nil {
			return nil, &FormContentError{Field: name, Msg: "not in the requested schema"}
		}
		v, err := fld.check(content[name])
		if err != nil {
			return nil, &FormContentError{Field: name, Msg: err.Error()}
		}
		out[name] = v
	}
	for _, fld := range f.Fields {
		if _, ok := content[fld.Name]; fld.Required && !ok {
			return nil, &FormContentError{Field: fld.Name, Msg: "required"}
		}
	}
	return out, nil
}

func (f *FormField) check(v any) (any, error) {
	switch f.Kind {
	case FormString, FormEnum:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %T", v)
		}
		return s, f.checkString(s)
	case FormNumber, FormInteger:
		n, ok := number(v)
		if !ok {
			return nil, fmt.Errorf("want a number, got %T", v)
		}
		if f.Kind == FormInteger && (n != math.Trunc(n) || math.Abs(n) >= 1<<53) {
			return nil, fmt.Errorf("want an integer, got %v", n)
		}
		if f.Minimum != nil && n < *f.Minimum || f.Maximum != nil && n > *f.Maximum {
			return nil, fmt.Errorf("%v is out of range", n)
		}
		if f.Kind == FormInteger {
			return int64(n), nil
		}
		return n, nil
	case FormBoolean:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want a boolean, got %T", v)
		}
		return b, nil
	case FormMultiSelect:
		vs, ok := v.([]string)
		if !ok {
			return nil, fmt.Errorf("want a []string, got %T", v)
		}
		if f.MinItems != nil && len(vs) < *f.MinItems || f.MaxItems != nil && len(vs) > *f.MaxItems {
			return nil, fmt.Errorf("%d items is out of range", len(vs))
		}
		for _, s := range vs {
			if !f.offers(s) {
				return nil, fmt.Errorf("%q is not a choice", s)
			}
		}
		return append([]string{}, vs...), nil
	}
	return nil, fmt.Errorf("type %q cannot be answered", f.Type)
}

func (f *FormField) checkString(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	n := utf8.RuneCountInString(s)
	if f.MinLength != nil && n < *f.MinLength || f.MaxLength != nil && n > *f.MaxLength {
		return fmt.Errorf("length %d is out of range", n)
	}
	if f.Kind == FormEnum && !f.offers(s) {
		return fmt.Errorf("%q is not a choice", s)
	}
	if f.Pattern != "" {
		// RE2, not ECMA-262: a pattern it cannot compile is left to the
		// agent, which validates again (the spec asks it to).
		if re, err := regexp.Compile(f.Pattern); err == nil && !re.MatchString(s) {
			return fmt.Errorf("does not match the pattern %q", f.Pattern)
		}
	}
	return checkFormat(f.Format, s)
}

func checkFormat(format, s string) error {
	var err error
	switch format {
	case "email":
		_, err = mail.ParseAddress(s)
	case "uri":
		var u *url.URL
		if u, err = url.Parse(s); err == nil && !u.IsAbs() {
			err = errors.New("not absolute")
		}
	case "date":
		_, err = time.Parse(time.DateOnly, s)
	case "date-time":
		_, err = time.Parse(time.RFC3339, s)
	}
	if err != nil {
		return fmt.Errorf("not a valid %s", format)
	}
	return nil
}

func (f *FormField) offers(s string) bool {
	for _, c := range f.Choices {
		if c.Value == s {
			return true
		}
	}
	return false
}

// number reads the numeric types a hook may answer with.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case float32:
		return float64(n), !math.IsNaN(float64(n)) && !math.IsInf(float64(n), 0)
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil && !math.IsInf(f, 0)
	}
	return 0, false
}
