package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/idsauth/idsauth/scope"
)

const (
	clientID     = "bench-client"
	clientSecret = "bench-client-secret-0123456789abcdef"
	tokenPath    = "/ids/connect/token"
)

// tokenRequest is the one request sent to both servers, built once:
// client_credentials with Basic authentication (RFC 6749 §2.3.1: each
// part form-urlencoded first), on a keep-alive connection.
var tokenRequest = func() []byte {
	body := "grant_type=client_credentials&scope=" + url.QueryEscape(scope.AdminWebAPI)
	basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(clientID) + ":" + url.QueryEscape(clientSecret)))
	return []byte("POST " + tokenPath + " HTTP/1.1\r\n" +
		"Host: 127.0.0.1\r\n" +
		"Authorization: Basic " + basic + "\r\n" +
		"Content-Type: application/x-www-form-urlencoded\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"\r\n" + body)
}()

// result is what a load run counted.
type result struct {
	ok, failed int64
	elapsed    time.Duration
}

// drive sends req on conns keep-alive connections to addr, one request at
// a time on each, until d has passed, and counts the 200 answers that
// arrived within d.
func drive(addr string, req []byte, conns int, d time.Duration) (result, error) {
	if err := checkLoopback(addr); err != nil {
		return result{}, err
	}
	cs := make([]net.Conn, 0, conns)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return result{}, err
		}
		cs = append(cs, c)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		total   result
		lastErr error
	)
	start := time.Now()
	end := start.Add(d)
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ok, failed int64
			// Past its deadline a connection stops whatever it waits for.
			_ = c.SetDeadline(end.Add(5 * time.Second))
			br := bufio.NewReaderSize(c, 8192)
			var err error
			for time.Now().Before(end) {
				var status int
				if _, err = c.Write(req); err != nil {
					break
				}
				if status, err = readAnswer(br); err != nil {
					break
				}
				if !time.Now().Before(end) {
					break // arrived late: not counted
				}
				if status == 200 {
					ok++
				} else {
					failed++
				}
			}
			mu.Lock()
			total.ok += ok
			total.failed += failed
			if err != nil && lastErr == nil {
				lastErr = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	total.elapsed = d
	if lastErr != nil {
		return total, lastErr
	}
	return total, nil
}

// fetch sends req once on a new connection and returns the answer's body,
// which must come with a 200.
func fetch(addr string, req []byte) ([]byte, error) {
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(req); err != nil {
		return nil, err
	}
	br := bufio.NewReader(c)
	status, n, err := readHead(br)
	if err != nil {
		return nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, err
	}
	if status != 200 {
		return nil, fmt.Errorf("answered %d: %s", status, body)
	}
	return body, nil
}

// readAnswer reads one answer and discards its body.
func readAnswer(br *bufio.Reader) (status int, err error) {
	status, n, err := readHead(br)
	if err != nil {
		return 0, err
	}
	_, err = br.Discard(n)
	return status, err
}

var contentLength = []byte("content-length:")

// readHead reads an answer's status line and header, and returns the
// status and the Content-Length (which the servers measured here always
// send: their answers are short and written at once).
func readHead(br *bufio.Reader) (status, length int, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, 0, fmt.Errorf("not an HTTP/1.1 answer: %q", line)
	}
	status = atoi(line[9:12])
	length = -1
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return 0, 0, err
		}
		if len(line) <= 2 { // the empty line
			break
		}
		if len(line) > len(contentLength) && bytes.EqualFold(line[:len(contentLength)], contentLength) {
			length = atoi(bytes.TrimSpace(line[len(contentLength):]))
		}
	}
	if length < 0 {
		return 0, 0, errors.New("answer without a Content-Length")
	}
	return status, length, nil
}

// atoi reads a non-negative decimal number; -1 if b is not one.
func atoi(b []byte) int {
	if len(b) == 0 || len(b) > 9 {
		return -1
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// checkLoopback refuses any address that is not a loopback one.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not a loopback address: refused", addr)
	}
	return nil
}
