package issuer

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/idsauth/idsauth/tokenstore"
)

// A token carries the epoch of its client's registration, and
// introspection answers it active only while the client's epoch is the
// same (stillIssued): a client removed, disabled, or stripped of every
// secret, and then served again, is a new client for the tokens issued
// before. A registry gives each registration its epoch
// (ClientConfig.Epoch); for every other client, the file's above all,
// the issuer keeps a record of its own, here, and in its token store when
// the store is a tokenstore.Epochs, so that the record outlives a restart
// and reaches the replicas that share the store.

// epochClaim is the claim in which a JWT carries its client's epoch,
// when not zero.
const epochClaim = "idsauth_epoch"

// maxEpoch is the largest epoch: a JWT carries it as a JSON number, which
// every JSON reader reads exactly up to 2^53-1 (jws.Claims.Uint53).
const maxEpoch = 1<<53 - 1

// epochTimeout bounds the token store's calls for the record of epochs,
// at a Reload or SetRegistered.
const epochTimeout = 5 * time.Second

// epochs is the issuer's record of the epochs of its clients that the
// configuration gives none: by client ID, zero for one never ended.
type epochs struct {
	known map[string]uint64
	store tokenstore.Epochs // nil: this process's record alone
}

// nextEpoch is the epoch that follows e for client id: the same on every
// replica that ends the client, with nothing shared, and at most 2^53 so
// that any JSON reader reads it exactly.
func nextEpoch(id string, e uint64) uint64 {
	h := sha256.New()
	h.Write([]byte("idsauth epoch\x00"))
	h.Write([]byte(id))
	h.Write(binary.BigEndian.AppendUint64([]byte{0}, e))
	return binary.BigEndian.Uint64(h.Sum(nil))&maxEpoch | 1
}

// recordEpochs ends each client of ended (a new epoch in the record),
// then returns the record, having read from the store the epoch of each
// of served never read before, and again each of reread that this call
// did not end: a Reload passes the file's clients, so that a replica that
// never applied a removal another one made (it reloaded the file of after
// alone) takes the epoch the store holds, and the replicas agree again.
// It runs under iss.mu.
func (iss *Issuer) recordEpochs(ended, served, reread []string) map[string]uint64 {
	e := &iss.epochs
	if e.known == nil {
		e.known = make(map[string]uint64)
		e.store, _ = iss.tokens.(tokenstore.Epochs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), epochTimeout)
	defer cancel()
	done := map[string]bool{}
	for _, id := range ended {
		if done[id] {
			continue
		}
		from := e.known[id]
		to := nextEpoch(id, from)
		e.known[id], done[id] = to, true
		if e.store == nil {
			continue
		}
		if err := e.store.AdvanceEpoch(ctx, id, from, to); err != nil {
			iss.logger.Error("idsauth issuer: the token store cannot record that a client ended: this replica ends its tokens, a replica starting later may not",
				slog.String("client_id", id), slog.String("error", err.Error()))
		}
	}
	var unread []string
	for _, id := range served {
		if _, ok := e.known[id]; !ok {
			unread = append(unread, id)
		}
	}
	for _, id := range reread {
		if _, ok := e.known[id]; ok && !done[id] && slices.Contains(served, id) {
			unread = append(unread, id)
		}
	}
	if len(unread) > 0 && e.store != nil {
		got, err := e.store.Epochs(ctx, unread)
		if err != nil {
			iss.logger.Error("idsauth issuer: the token store cannot tell the epochs of clients: they are read again at the next reload",
				slog.Int("clients", len(unread)), slog.String("error", err.Error()))
			unread = nil
		}
		for i, id := range unread {
			e.known[id] = got[i]
		}
	} else {
		for _, id := range unread {
			e.known[id] = 0
		}
	}
	return e.known
}

// ended returns the clients of was (each without an epoch of its own, by
// its secret hashes) that now no longer serves without one, or serves
// without any of the secrets it had: a secret leaked is replaced so, and
// the tokens it got end with it.
func ended(was, now map[string][]string) []string {
	var out []string
	for id, hashes := range was {
		if n, ok := now[id]; !ok || droppedEverySecret(hashes, n) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// droppedEverySecret reports whether now holds none of the secret hashes
// was held.
func droppedEverySecret(was, now []string) bool {
	for _, h := range was {
		if slices.Contains(now, h) {
			return false
		}
	}
	return len(was) > 0
}

// appendEpoch appends cl's epoch claim to a token's claims, when not zero.
func appendEpoch(b []byte, cl *client) []byte {
	if cl.epoch == 0 {
		return b
	}
	b = append(b, `,"`+epochClaim+`":`...)
	return strconv.AppendUint(b, cl.epoch, 10)
}
