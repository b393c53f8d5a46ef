package issuer

import (
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/secret"
)

// tokenResponse is the success answer of the token endpoint (RFC 6749 §5.1).
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
}

// tokenError is a failed token request: the answer and, for the log, why.
type tokenError struct {
	status int
	code   string
	desc   string
	basic  bool // answer with a Basic challenge
	retry  time.Duration
}

func badRequest(code, desc string) *tokenError {
	return &tokenError{status: http.StatusBadRequest, code: code, desc: desc}
}

// token serves the token endpoint (CONTRACT.md §2).
func (iss *Issuer) token(w http.ResponseWriter, r *http.Request, st *state) {
	resp, err := iss.issue(w, r, st)
	if err != nil {
		iss.refuse(w, r, err)
		return
	}
	oauthwire.WriteJSON(w, http.StatusOK, resp)
}

func (iss *Issuer) issue(w http.ResponseWriter, r *http.Request, st *state) (*tokenResponse, *tokenError) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return nil, &tokenError{status: http.StatusMethodNotAllowed, code: "invalid_request", desc: "the token endpoint takes POST only"}
	}
	form, terr := readForm(w, r, st.limits.MaxBodyBytes)
	if terr != nil {
		return nil, terr
	}
	grant := form.Get("grant_type")
	switch grant {
	case "":
		return nil, badRequest("invalid_request", "grant_type is missing")
	case "client_credentials":
	default:
		return nil, badRequest("unsupported_grant_type", "only client_credentials is supported")
	}

	id, pass, basic, terr := credentials(r, form)
	if terr != nil {
		return nil, terr
	}
	now := iss.now()
	addr := iss.remoteAddr(r, st)
	if wait := max(st.byClient.retryAfter(id, now), st.byAddr.retryAfter(addr, now)); wait > 0 {
		return nil, &tokenError{status: http.StatusTooManyRequests, code: "slow_down", desc: "too many failed attempts; try again later", retry: wait}
	}
	cl := st.clients[id]
	var hashes []secret.Hash // none for an unknown client: same work, no match
	if cl != nil {
		hashes = cl.hashes
	}
	if !iss.verifier.Verify(hashes, pass) {
		if id != "" {
			st.byClient.fail(id, now)
		}
		st.byAddr.fail(addr, now)
		return nil, &tokenError{status: http.StatusUnauthorized, code: "invalid_client", desc: "client authentication failed", basic: basic}
	}
	if !cl.clientCreds {
		return nil, badRequest("unauthorized_client", "the client may not use client_credentials")
	}
	granted, terr := grantScopes(form.Get("scope"), cl)
	if terr != nil {
		return nil, terr
	}
	tok, err := st.sign(cl, granted, now)
	if err != nil {
		iss.logger.Error("idsauth issuer: cannot sign a token", slog.String("error", err.Error()))
		return nil, &tokenError{status: http.StatusInternalServerError, code: "server_error", desc: "the token could not be signed"}
	}
	return &tokenResponse{
		AccessToken: tok,
		TokenType:   "Bearer",
		ExpiresIn:   int64(cl.lifetime / time.Second),
		Scope:       strings.Join(granted, " "),
	}, nil
}

// readForm reads the form body: the right content type, within the size
// bound, each parameter at most once.
func readForm(w http.ResponseWriter, r *http.Request, maxBytes int64) (url.Values, *tokenError) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, badRequest("invalid_request", "Content-Type must be application/x-www-form-urlencoded")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, badRequest("invalid_request", "request body larger than "+strconv.FormatInt(maxBytes, 10)+" bytes")
		}
		return nil, badRequest("invalid_request", "request body could not be read")
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, badRequest("invalid_request", "request body is not a valid form")
	}
	for name, vs := range form {
		if len(vs) > 1 {
			return nil, badRequest("invalid_request", "parameter "+oauthwire.Clean(name)+" given more than once")
		}
	}
	return form, nil
}

// credentials returns the client's ID and secret, from HTTP Basic (whose
// parts are form-urlencoded, RFC 6749 §2.3.1) or the body, never both.
func credentials(r *http.Request, form url.Values) (id, pass string, basic bool, _ *tokenError) {
	inBody := form.Has("client_id") || form.Has("client_secret")
	authz := r.Header.Values("Authorization")
	if len(authz) > 1 {
		return "", "", false, badRequest("invalid_request", "more than one Authorization header")
	}
	if len(authz) == 1 && len(authz[0]) >= 6 && strings.EqualFold(authz[0][:6], "Basic ") {
		if inBody {
			return "", "", false, badRequest("invalid_request", "client credentials given both in the Authorization header and in the body")
		}
		u, p, ok := r.BasicAuth()
		if ok {
			var err1, err2 error
			u, err1 = url.QueryUnescape(u)
			p, err2 = url.QueryUnescape(p)
			ok = err1 == nil && err2 == nil
		}
		if !ok || u == "" {
			return "", "", true, &tokenError{status: http.StatusUnauthorized, code: "invalid_client", desc: "malformed Basic credentials", basic: true}
		}
		return u, p, true, nil
	}
	if !form.Has("client_id") {
		return "", "", false, &tokenError{status: http.StatusUnauthorized, code: "invalid_client", desc: "no client credentials"}
	}
	return form.Get("client_id"), form.Get("client_secret"), false, nil
}

// grantScopes checks the requested scopes against the client's and returns
// them in the order asked, without duplicates.
func grantScopes(requested string, cl *client) ([]string, *tokenError) {
	fields := strings.Fields(requested)
	if len(fields) == 0 {
		return nil, badRequest("invalid_scope", "scope is missing")
	}
	granted := make([]string, 0, len(fields))
	for _, s := range fields {
		if !cl.scopes.Has(s) {
			return nil, badRequest("invalid_scope", "scope not allowed for this client")
		}
		dup := false
		for _, g := range granted {
			dup = dup || g == s
		}
		if !dup {
			granted = append(granted, s)
		}
	}
	return granted, nil
}

// remoteAddr is the client's address, for the failure limiter.
func (iss *Issuer) remoteAddr(r *http.Request, st *state) string {
	if h := st.limits.TrustedProxyHeader; h != "" {
		if v := r.Header.Values(h); len(v) > 0 {
			last := v[len(v)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if a := strings.TrimSpace(last); a != "" {
				return a
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// refuse writes a token endpoint error and reports it.
func (iss *Issuer) refuse(w http.ResponseWriter, r *http.Request, e *tokenError) {
	h := w.Header()
	if e.basic {
		h.Set("WWW-Authenticate", `Basic realm="idsauth", charset="UTF-8"`)
	}
	if e.retry > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfterSeconds(e.retry)))
	}
	iss.logger.LogAttrs(r.Context(), slog.LevelInfo, "idsauth issuer: token request refused",
		slog.Int("status", e.status), slog.String("error", e.code), slog.String("reason", e.desc))
	oauthwire.WriteJSON(w, e.status, oauthwire.Error{Code: e.code, Description: e.desc})
}
