package main

// A JSON reader that accepts and refuses exactly what Python's json.loads does (CPython 3.13's
// C scanner), with the same messages and positions (in characters, not bytes), so the hook's
// errors read the same as the Python hook's did. Values the hook does not use (numbers) are kept
// as their text.

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

const maxDepth = 1000

type jsonError struct {
	msg  string
	line int
	col  int
}

func (e *jsonError) Error() string {
	return fmt.Sprintf("%s (line %d, column %d)", e.msg, e.line, e.col)
}

type stopIteration struct{ pos int }

type decoder struct {
	s     []rune
	depth int
}

func (d *decoder) fail(msg string, pos int) *jsonError {
	line, last := 1, -1
	for i := 0; i < pos && i < len(d.s); i++ {
		if d.s[i] == '\n' {
			line++
			last = i
		}
	}
	return &jsonError{msg: msg, line: line, col: pos - last}
}

func isWS(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

func (d *decoder) skip(i int) int {
	for i < len(d.s) && isWS(d.s[i]) {
		i++
	}
	return i
}

// parseJSON decodes text as json.loads would; the error is a *jsonError.
func parseJSON(text string) (value any, err error) {
	if !utf8.ValidString(text) {
		return nil, &jsonError{msg: "not UTF-8 text", line: 1, col: 1}
	}
	d := &decoder{s: []rune(text)}
	if len(d.s) > 0 && d.s[0] == '\ufeff' {
		return nil, d.fail("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0)
	}
	defer func() {
		if r := recover(); r != nil {
			switch e := r.(type) {
			case *jsonError:
				value, err = nil, e
			case stopIteration:
				value, err = nil, d.fail("Expecting value", e.pos)
			default:
				panic(r)
			}
		}
	}()
	start := d.skip(0)
	value, end := d.scan(start)
	end = d.skip(end)
	if end != len(d.s) {
		return nil, d.fail("Extra data", end)
	}
	return value, nil
}

func (d *decoder) has(i int, word string) bool {
	w := []rune(word)
	if i+len(w) > len(d.s) {
		return false
	}
	for k, r := range w {
		if d.s[i+k] != r {
			return false
		}
	}
	return true
}

func (d *decoder) scan(i int) (any, int) {
	if i >= len(d.s) {
		panic(stopIteration{i})
	}
	switch c := d.s[i]; {
	case c == '"':
		return d.str(i + 1)
	case c == '{':
		return d.object(i + 1)
	case c == '[':
		return d.array(i + 1)
	case c == 'n' && d.has(i, "null"):
		return nil, i + 4
	case c == 't' && d.has(i, "true"):
		return true, i + 4
	case c == 'f' && d.has(i, "false"):
		return false, i + 5
	case c == 'N' && d.has(i, "NaN"):
		return number("NaN"), i + 3
	case c == 'I' && d.has(i, "Infinity"):
		return number("Infinity"), i + 8
	case c == '-' && d.has(i, "-Infinity"):
		return number("-Infinity"), i + 9
	}
	return d.number(i)
}

type number string

func digit(r rune) bool { return r >= '0' && r <= '9' }

func (d *decoder) number(start int) (any, int) {
	s, i, last := d.s, start, len(d.s)-1
	if s[i] == '-' {
		i++
		if i > last {
			panic(stopIteration{start})
		}
	}
	switch {
	case s[i] >= '1' && s[i] <= '9':
		i++
		for i <= last && digit(s[i]) {
			i++
		}
	case s[i] == '0':
		i++
	default:
		panic(stopIteration{start})
	}
	if i < last && s[i] == '.' && digit(s[i+1]) {
		i += 2
		for i <= last && digit(s[i]) {
			i++
		}
	}
	if i < last && (s[i] == 'e' || s[i] == 'E') {
		e := i
		i++
		if i < last && (s[i] == '-' || s[i] == '+') {
			i++
		}
		for i <= last && digit(s[i]) {
			i++
		}
		if !digit(s[i-1]) {
			i = e
		}
	}
	return number(string(s[start:i])), i
}

func (d *decoder) enter(i int) {
	d.depth++
	if d.depth > maxDepth {
		panic(d.fail("nested too deeply", i))
	}
}

func (d *decoder) object(i int) (any, int) {
	d.enter(i)
	defer func() { d.depth-- }()
	out := map[string]any{}
	s := d.s
	i = d.skip(i)
	if i < len(s) && s[i] == '}' {
		return out, i + 1
	}
	for {
		if i >= len(s) || s[i] != '"' {
			panic(d.fail("Expecting property name enclosed in double quotes", i))
		}
		key, next := d.str(i + 1)
		i = d.skip(next)
		if i >= len(s) || s[i] != ':' {
			panic(d.fail("Expecting ':' delimiter", i))
		}
		i = d.skip(i + 1)
		value, next := d.scan(i)
		out[key.(string)] = value
		i = d.skip(next)
		if i < len(s) && s[i] == '}' {
			return out, i + 1
		}
		if i >= len(s) || s[i] != ',' {
			panic(d.fail("Expecting ',' delimiter", i))
		}
		comma := i
		i = d.skip(i + 1)
		if i < len(s) && s[i] == '}' {
			panic(d.fail("Illegal trailing comma before end of object", comma))
		}
	}
}

func (d *decoder) array(i int) (any, int) {
	d.enter(i)
	defer func() { d.depth-- }()
	out := []any{}
	s := d.s
	i = d.skip(i)
	if i < len(s) && s[i] == ']' {
		return out, i + 1
	}
	for {
		value, next := d.scan(i)
		out = append(out, value)
		i = d.skip(next)
		if i < len(s) && s[i] == ']' {
			return out, i + 1
		}
		if i >= len(s) || s[i] != ',' {
			panic(d.fail("Expecting ',' delimiter", i))
		}
		comma := i
		i = d.skip(i + 1)
		if i < len(s) && s[i] == ']' {
			panic(d.fail("Illegal trailing comma before end of array", comma))
		}
	}
}

func hexValue(r rune) int {
	switch {
	case r >= '0' && r <= '9':
		return int(r - '0')
	case r >= 'a' && r <= 'f':
		return int(r-'a') + 10
	case r >= 'A' && r <= 'F':
		return int(r-'A') + 10
	}
	return -1
}

// hex4 reads 4 hex digits at s[i:i+4]; the error names position errAt.
func (d *decoder) hex4(i, errAt int) rune {
	var c rune
	for k := i; k < i+4; k++ {
		v := hexValue(d.s[k])
		if v < 0 {
			panic(d.fail("Invalid \\uXXXX escape", errAt))
		}
		c = c<<4 | rune(v)
	}
	return c
}

// str reads a string whose opening quote is at i-1; returns it and the index after the quote.
func (d *decoder) str(i int) (any, int) {
	s, begin := d.s, i-1
	var b strings.Builder
	for {
		j := i
		for j < len(s) && s[j] != '"' && s[j] != '\\' {
			if s[j] <= 0x1f {
				panic(d.fail("Invalid control character at", j))
			}
			j++
		}
		if j >= len(s) {
			panic(d.fail("Unterminated string starting at", begin))
		}
		b.WriteString(string(s[i:j]))
		if s[j] == '"' {
			return b.String(), j + 1
		}
		j++
		if j == len(s) {
			panic(d.fail("Unterminated string starting at", begin))
		}
		if c := s[j]; c != 'u' {
			repl, ok := map[rune]rune{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f',
				'n': '\n', 'r': '\r', 't': '\t'}[c]
			if !ok {
				panic(d.fail("Invalid \\escape", j-1))
			}
			b.WriteRune(repl)
			i = j + 1
			continue
		}
		j++
		end := j + 4
		if end >= len(s) {
			panic(d.fail("Invalid \\uXXXX escape", j-1))
		}
		c := d.hex4(j, end-5)
		if c >= 0xd800 && c <= 0xdbff && end+6 < len(s) && s[end] == '\\' && s[end+1] == 'u' {
			c2 := d.hex4(end+2, end+1)
			if c2 >= 0xdc00 && c2 <= 0xdfff {
				c = 0x10000 + (c-0xd800)<<10 + (c2 - 0xdc00)
				end += 6
			}
		}
		b.WriteRune(c) // a lone surrogate becomes U+FFFD
		i = end
	}
}
