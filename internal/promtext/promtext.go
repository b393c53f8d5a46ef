// Package promtext writes the Prometheus text exposition format (version
// 0.0.4): the one writer of package metrics and of the idsauth command's
// own families.
package promtext

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"
)

// ContentType is the text format's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Writer writes families and samples, buffered; Flush ends them.
type Writer struct {
	b *bufio.Writer
	n int64
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer {
	pw := &Writer{}
	pw.b = bufio.NewWriter(countingWriter{w: w, n: &pw.n})
	return pw
}

// Header starts a family: its HELP and TYPE lines.
func (w *Writer) Header(name, help, typ string) {
	w.b.WriteString("# HELP " + name + " " + escapeHelp(help) + "\n")
	w.b.WriteString("# TYPE " + name + " " + typ + "\n")
}

// Sample writes one sample: name{labels[i]="values[i]",...} value.
func (w *Writer) Sample(name string, labels, values []string, value string) {
	w.b.WriteString(name)
	if len(labels) > 0 {
		w.b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.b.WriteByte(',')
			}
			w.b.WriteString(l + `="` + escapeLabel(values[i]) + `"`)
		}
		w.b.WriteByte('}')
	}
	w.b.WriteString(" " + value + "\n")
}

// Flush writes what is buffered, and returns the bytes written in all.
func (w *Writer) Flush() (int64, error) {
	err := w.b.Flush()
	return w.n, err
}

// Float formats a sample value.
func Float(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// escapeLabel escapes a label value as the format requires: backslash,
// double quote and line feed.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// escapeHelp escapes a help text: backslash and line feed.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

type countingWriter struct {
	w io.Writer
	n *int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	*c.n += int64(n)
	return n, err
}
