package redistest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy on loopback in front of a Redis that delays what
// clients send by a delay the test sets and changes: a Redis that answers
// slowly, or a spike. Each chunk a client sends reaches Redis the delay
// (read when the chunk arrives) later, in order; answers come back at
// once, so a round trip takes the delay.
type Proxy struct {
	Addr string // 127.0.0.1:port

	target string
	delay  atomic.Int64 // nanoseconds
	ln     net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

// StartProxy starts a proxy to the Redis at target, with no delay, and
// stops it (closing every connection) when t ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// SetDelay sets the delay of what clients send from now on.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		r, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, r) {
			return
		}
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			p.delayed(r, c)
			r.Close()
		}()
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(c, r)
			c.Close()
		}()
	}
}

// track records both ends of a connection, or closes them when the proxy
// is closed already.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = true
	}
	return true
}

type chunk struct {
	b  []byte
	at time.Time // when it may be sent on
}

// delayed copies from src to dst, each chunk its delay late.
func (p *Proxy) delayed(dst, src net.Conn) {
	chunks := make(chan chunk, 1024)
	go func() {
		defer close(chunks)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				chunks <- chunk{b[:n], time.Now().Add(time.Duration(p.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.b); err != nil {
			src.Close() // ends the reader above
			for range chunks {
			}
			return
		}
	}
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
