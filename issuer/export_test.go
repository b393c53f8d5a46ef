package issuer

import (
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/secret"
)

// VerifierCounts exposes, to tests only, the work the issuer's secret
// verifier has done: counting work is how tests check properties about
// time.
func VerifierCounts(iss *Issuer) secret.Counts { return iss.st.Load().verifier.Counts() }

// LimiterBytes is the memory of the issuer's own failure limiter.
func LimiterBytes(iss *Issuer) int { return iss.st.Load().limiter.(*limit.Memory).Bytes() }

// ReplayBytes is the memory of the issuer's assertion replay cache: its
// table, and what a resize carried beside it.
func ReplayBytes(iss *Issuer) int { return iss.replays.Bytes() }

// ReplayLive counts the jtis the replay cache remembers now.
func ReplayLive(iss *Issuer) int { return iss.replays.Live(iss.now()) }

// RepeatMarks counts the HMACs the repeated-wrong-secret table of the
// issuer's configuration has computed.
func RepeatMarks(iss *Issuer) int64 { return iss.st.Load().repeats.Marks() }

// RaceEnabled reports whether the tests run under the race detector.
const RaceEnabled = raceEnabled
