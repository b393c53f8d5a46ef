package main

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// serve runs one server until its standard input closes or life passes.
// It reads a PEM private key from standard input and, for the bare
// server, the idsauth answer it imitates, on one line.
func serve(role string, life time.Duration, profile string) error {
	if life <= 0 || life > time.Hour {
		return errors.New("-life must be from 1ns to 1h")
	}
	in := bufio.NewReader(os.Stdin)
	var pemKey strings.Builder
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return fmt.Errorf("reading the key: %w", err)
		}
		pemKey.WriteString(line)
		if strings.HasPrefix(line, "-----END ") {
			break
		}
	}
	priv, err := keys.ParsePEM([]byte(pemKey.String()))
	if err != nil {
		return err
	}
	var h http.Handler
	switch role {
	case "idsauth":
		h, err = idsauthServer(priv)
	case "registry":
		h, err = registryServer(priv)
	case "bare":
		var answer []byte
		if answer, err = in.ReadBytes('\n'); err == nil {
			h, err = bareServer(priv, answer)
		}
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("listening %s\n", ln.Addr())
	// Until the command closes standard input, or life passes.
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, in); close(done) }()
	select {
	case <-done:
	case <-time.After(life):
	}
	// The collections it ran, for -counts to tell those within the
	// requests counted: the difference of two runs.
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(os.Stderr, "gc-cycles %d\n", ms.NumGC)
	return srv.Close()
}

// idsauthServer is the token endpoint under test: one ES256 key, one
// client with a sha256 secret.
func idsauthServer(priv any) (http.Handler, error) {
	signer, ok := priv.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an ECDSA key")
	}
	return issuer.New(&issuer.Config{
		Issuer: "http://127.0.0.1/ids",
		Keys:   []issuer.KeyConfig{{Key: signer, Alg: "ES256"}},
		Clients: []issuer.ClientConfig{{
			ClientID:     clientID,
			SecretHashes: []string{secret.HashSHA256(clientSecret).String()},
			Scopes:       []string{scope.AdminWebAPI},
		}},
	})
}

// registryServer is the token endpoint under test with its client
// registered: one of -registry clients given by Issuer.SetRegistered, as
// pgregistry gives its snapshot, and none in the configuration.
func registryServer(priv any) (http.Handler, error) {
	signer, ok := priv.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an ECDSA key")
	}
	iss, err := issuer.New(&issuer.Config{
		Issuer: "http://127.0.0.1/ids",
		Keys:   []issuer.KeyConfig{{Key: signer, Alg: "ES256"}},
		Scopes: []string{"reports.read"},
	})
	if err != nil {
		return nil, err
	}
	// The shape the issue states: one secret hash, three scopes; an epoch
	// of its own, as pgregistry gives one.
	three := []string{scope.AdminWebAPI, scope.ConnectWebAPI, "reports.read"}
	clients := make([]issuer.ClientConfig, max(registered, 1))
	for i := range clients {
		id, pass := fmt.Sprintf("client-%06d", i), fmt.Sprintf("secret-%06d", i)
		if i == len(clients)/2 {
			id, pass = clientID, clientSecret
		}
		clients[i] = issuer.ClientConfig{ClientID: id, SecretHashes: []string{secret.HashSHA256(pass).String()}, Scopes: three, Epoch: uint64(i + 1)}
	}
	return iss, iss.SetRegistered(clients, nil)
}

// bareServer answers every request with answer, the token in it signed
// anew: the same header and claims, one fresh ES256 signature over them
// by ecdsa.Sign (hedged: random nonce mixed with the key and the hash).
// Nothing else: no form, no authentication, no claims to build.
func bareServer(priv any, answer []byte) (http.Handler, error) {
	key, ok := priv.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an ECDSA key")
	}
	var a struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return nil, err
	}
	at := bytes.Index(answer, []byte(a.AccessToken))
	dot := strings.LastIndexByte(a.AccessToken, '.')
	if a.AccessToken == "" || at < 0 || dot < 0 {
		return nil, errors.New("no token in the answer")
	}
	input := a.AccessToken[:dot]
	prefix := string(answer[:at]) + input + "."
	suffix := string(answer[at+len(a.AccessToken):])
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		digest := sha256.Sum256([]byte(input))
		rr, ss, err := ecdsa.Sign(rand.Reader, key, digest[:])
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var sig [64]byte
		rr.FillBytes(sig[:32])
		ss.FillBytes(sig[32:])
		body := make([]byte, 0, len(prefix)+86+len(suffix))
		body = append(body, prefix...)
		body = base64.RawURLEncoding.AppendEncode(body, sig[:])
		body = append(body, suffix...)
		hd := w.Header()
		hd.Set("Content-Type", "application/json")
		hd.Set("Cache-Control", "no-store")
		hd.Set("Pragma", "no-cache")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}), nil
}
