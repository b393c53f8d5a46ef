// Package testlog captures log output in tests: a buffer that handlers on
// other goroutines may write while the test reads it, and a JSON logger at
// debug level that writes into it, so that a test sees every line.
package testlog

import (
	"log/slog"
	"strings"
	"sync"
)

// Buffer is a strings.Builder safe for concurrent use.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// New returns a buffer and a JSON logger at debug level writing into it.
func New() (*Buffer, *slog.Logger) {
	b := &Buffer{}
	return b, slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
