package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/internal/keys"
)

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:1": true, "10.0.0.1:80": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if err := checkLoopback(addr); (err == nil) != ok {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

func TestReadAnswer(t *testing.T) {
	in := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCONTENT-LENGTH: 5\r\n\r\nhello" +
		"HTTP/1.1 401 Unauthorized\r\ncontent-length: 2\r\n\r\nno" +
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	br := bufio.NewReader(strings.NewReader(in))
	for _, want := range []int{200, 401} {
		if status, err := readAnswer(br); err != nil || status != want {
			t.Fatalf("status %d, %v; want %d", status, err, want)
		}
	}
	if _, err := readAnswer(br); err == nil {
		t.Fatal("an answer without Content-Length was read")
	}
}

// TestServersAnswerAlike: the bare server answers what idsauth answers,
// the token signed anew, verifying with the key.
func TestServersAnswerAlike(t *testing.T) {
	k, err := keys.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	post := func(h http.Handler) []byte {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(tokenRequest)))
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		return rec.Body.Bytes()
	}
	ids, err := idsauthServer(k.Private)
	if err != nil {
		t.Fatal(err)
	}
	answer := post(ids)
	bare, err := bareServer(k.Private, answer)
	if err != nil {
		t.Fatal(err)
	}
	var a, b struct {
		AccessToken string `json:"access_token"`
		Scope       string `json:"scope"`
	}
	got := post(bare)
	if json.Unmarshal(answer, &a) != nil || json.Unmarshal(got, &b) != nil {
		t.Fatalf("answers %s, %s", answer, got)
	}
	if len(got) != len(answer) || b.Scope != a.Scope || a.AccessToken == b.AccessToken {
		t.Errorf("bare answer %s, idsauth's %s", got, answer)
	}
	dot := strings.LastIndexByte(a.AccessToken, '.')
	if !strings.HasPrefix(b.AccessToken, a.AccessToken[:dot+1]) {
		t.Errorf("bare token %s does not sign idsauth's header and claims", b.AccessToken)
	}
	_, err = jwt.Parse(b.AccessToken, func(*jwt.Token) (any, error) { return k.Public(), nil }, jwt.WithValidMethods([]string{"ES256"}))
	if err != nil {
		t.Errorf("bare token: %v", err)
	}
}

func TestTotals(t *testing.T) {
	summary := `==27219== I   refs:      981,356,402
==27219== I1  misses:    7,655,321
==27219== LLi misses:       11,670
==27219== D1  misses:    5,658,346  ( 4,857,892 rd   +   800,454 wr)
`
	got, err := totals(summary)
	if err != nil || !slices.Equal(got, []int64{981356402, 7655321, 5658346}) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := totals("==1== I   refs: 5\n"); err == nil {
		t.Fatal("a summary without misses was read")
	}
}

func TestBootstrapMedian(t *testing.T) {
	if lo, hi := bootstrapMedian([]float64{0.9, 0.9, 0.9, 0.9}, 1000); lo != 0.9 || hi != 0.9 {
		t.Errorf("constant rounds: interval %v to %v", lo, hi)
	}
	// 31 rounds spread evenly from 0.85 to 1.15, median 1.00: the
	// median's standard error is about 0.027, so the interval is about
	// 0.95 to 1.05.
	var v []float64
	for i := range 31 {
		v = append(v, 0.85+0.01*float64(i))
	}
	lo, hi := bootstrapMedian(v, 10000)
	if !(0.93 <= lo && lo <= 0.97 && 1.03 <= hi && hi <= 1.07) {
		t.Errorf("interval %v to %v for rounds 0.85 to 1.15", lo, hi)
	}
	if lo2, hi2 := bootstrapMedian(v, 10000); lo2 != lo || hi2 != hi {
		t.Errorf("the same rounds gave %v to %v, then %v to %v", lo, hi, lo2, hi2)
	}
}
