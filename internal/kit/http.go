package kit

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"sync"
)

// HTTP sends requests over the network to an origin, as a client does:
// the sender of idsauth conformance.
type HTTP struct {
	// Origin is the scheme, host and port the requests go to, such as
	// "https://api.example.com".
	Origin string
	// Client returns the client that presents cert (nil: none) over TLS.
	// Nil means clients of Transport's TLS settings.
	Client func(cert *tls.Certificate) *http.Client

	mu      sync.Mutex
	clients map[*tls.Certificate]*http.Client
}

// Skip says why a request cannot go over the network: from an address
// chosen (the runner's is its own), over TLS to an http origin, or plain
// to an https one.
func (s *HTTP) Skip(req Request) string {
	switch {
	case req.From != "":
		return "needs a request from " + req.From + ": the runner sends from its own address"
	case req.Conn == TLSConn && !strings.HasPrefix(s.Origin, "https://"):
		return "needs a TLS connection: the URL is not https"
	case req.Conn == PlainConn && !strings.HasPrefix(s.Origin, "http://"):
		return "needs plain HTTP: the URL is https"
	}
	return ""
}

// Send sends req and reads the answer (64 KiB of its body at most). It
// follows no redirect.
func (s *HTTP) Send(req Request) (Answer, error) {
	var body io.Reader
	if req.Body != "" {
		body = strings.NewReader(req.Body)
	}
	r, err := http.NewRequest(req.Method, s.Origin+req.Path, body)
	if err != nil {
		return Answer{}, err
	}
	for name, values := range req.Header {
		r.Header[name] = append([]string(nil), values...)
	}
	resp, err := s.client(req.Cert).Do(r)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Answer{}, err
	}
	return Answer{resp.StatusCode, resp.Header, string(b)}, nil
}

func (s *HTTP) client(cert *tls.Certificate) *http.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[cert]; ok {
		return c
	}
	var c *http.Client
	if s.Client != nil {
		c = s.Client(cert)
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if cert != nil {
			tr.TLSClientConfig = &tls.Config{Certificates: []tls.Certificate{*cert}}
		}
		c = &http.Client{Transport: tr}
	}
	cc := *c
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if s.clients == nil {
		s.clients = map[*tls.Certificate]*http.Client{}
	}
	s.clients[cert] = &cc
	return &cc
}
