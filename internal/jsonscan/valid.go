package jsonscan

// maxDepth is encoding/json's bound on nesting: a value nested deeper is
// not valid to it, and so not to Valid.
const maxDepth = 10000

// Valid reports whether b is one JSON value, with white space around it
// alone: what encoding/json.Valid reports, in one pass without its state
// machine's call per byte (FuzzValid compares the two). A registry's load
// checks a document of 100,000 clients, and json.Valid was a tenth of
// its CPU (BenchmarkLoad in pgregistry).
func Valid(b []byte) bool {
	var open []byte // the '{' or '[' of each container open at i
	i := SkipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; c {
		case '{', '[':
			if open = append(open, c); len(open) > maxDepth {
				return false
			}
			i = SkipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' or ']': empty
				open = open[:len(open)-1]
				i++
				break
			}
			if c == '{' {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			continue
		case '"':
			i = stringEnd(b, i)
		case 't':
			i = literal(b, i, "true")
		case 'f':
			i = literal(b, i, "false")
		case 'n':
			i = literal(b, i, "null")
		default:
			i = numberEnd(b, i)
		}
		// The value ends at i: then a comma, the end of a container, or
		// of b.
		for {
			if i < 0 {
				return false
			}
			i = SkipSpace(b, i)
			if len(open) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := open[len(open)-1]
			if b[i] == top+2 {
				open = open[:len(open)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = SkipSpace(b, i+1)
			if top == '{' {
				i = member(b, i)
			}
			break
		}
		if i < 0 {
			return false
		}
	}
}

// member returns the index just past the colon of the member whose name
// starts at b[i], and after the white space that follows it, or -1.
func member(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = stringEnd(b, i); i < 0 {
		return -1
	}
	if i = SkipSpace(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return SkipSpace(b, i+1)
}

// stringEnd returns the index just past the string that starts at b[i],
// or -1 when it is not a JSON string: a control character in it, an
// escape JSON does not have, or no closing quote.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
	return -1
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// literal returns the index just past word at b[i], or -1.
func literal(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// numberEnd returns the index just past the number that starts at b[i],
// or -1: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		i = digits(b, i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		i = digits(b, i)
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digits returns the index of the first byte from i that is not a digit.
func digits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}
