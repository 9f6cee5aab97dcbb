package translog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// Policy is a witness policy: which witnesses' cosignatures a checkpoint of the log needs, and
// how many. Its text form is the one Sigsum, Tessera and torchwood read (vkeys for keys):
//
//	log <log vkey> [URL]
//	witness <name> <cosignature vkey> [URL]      one line per witness key
//	group <name> <any|all|N> <witness name>...
//	quorum <group or witness name | none>
//
// with "#" comments. This package writes and reads one flat group of witnesses (nested groups
// are refused with the line named); the portal publishes one policy per key type.
type Policy struct {
	// Name says what the policy is for ("ecosystem", "post-quantum").
	Name string
	// Comment lines (without "#") written at the top.
	Comment []string
	// LogKey and LogURL are the log's vkey and its tlog-tiles URL ("" for none).
	LogKey, LogURL string
	// Witnesses are the policy's members, each one key.
	Witnesses []PolicyWitness
	// Threshold is how many members must have cosigned (0 with no witnesses: quorum none).
	Threshold int
}

// PolicyWitness is one member of a policy: a name local to the policy and a cosignature key.
type PolicyWitness struct {
	Name, VKey, URL string
}

// ErrPolicy is wrapped by ParsePolicy errors.
var ErrPolicy = errors.New("malformed witness policy")

// MaxPolicyBytes bounds a policy read from outside.
const MaxPolicyBytes = 64 << 10

// Format returns the policy's text form.
func (p Policy) Format() []byte {
	var b bytes.Buffer
	for _, c := range p.Comment {
		fmt.Fprintf(&b, "# %s\n", c)
	}
	b.WriteString("log " + p.LogKey)
	if p.LogURL != "" {
		b.WriteString(" " + p.LogURL)
	}
	b.WriteByte('\n')
	var names []string
	for _, w := range p.Witnesses {
		fmt.Fprintf(&b, "witness %s %s", w.Name, w.VKey)
		if w.URL != "" {
			b.WriteString(" " + w.URL)
		}
		b.WriteByte('\n')
		names = append(names, w.Name)
	}
	if len(p.Witnesses) == 0 || p.Threshold == 0 {
		b.WriteString("quorum none\n")
		return b.Bytes()
	}
	group := p.Name
	if group == "" {
		group = "witnesses"
	}
	fmt.Fprintf(&b, "group %s %d %s\nquorum %s\n", group, p.Threshold, strings.Join(names, " "), group)
	return b.Bytes()
}

// ParsePolicy reads a policy in the text form (see Policy), naming the line of any problem.
func ParsePolicy(b []byte) (Policy, error) {
	if len(b) > MaxPolicyBytes {
		return Policy{}, fmt.Errorf("%w: larger than %d bytes", ErrPolicy, MaxPolicyBytes)
	}
	pp := policyParser{members: map[string]int{}, groups: map[string]int{}, groupMembers: map[string][]string{}}
	for i, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var why string
		switch f[0] {
		case "log":
			why = pp.log(f)
		case "witness":
			why = pp.witness(f)
		case "group":
			why = pp.group(f)
		case "quorum":
			if len(f) != 2 || pp.quorum != "" {
				why = `want one "quorum <name|none>"`
			} else {
				pp.quorum = f[1]
			}
		default:
			why = fmt.Sprintf("unknown keyword %q", f[0])
		}
		if why != "" {
			return Policy{}, fmt.Errorf("%w: line %d: %s", ErrPolicy, i+1, why)
		}
	}
	return pp.finish()
}

// policyParser is a policy read line by line: the witnesses by name (their index in
// p.Witnesses), the group's threshold and members, and the quorum line's name.
type policyParser struct {
	p            Policy
	members      map[string]int
	groups       map[string]int
	groupMembers map[string][]string
	quorum       string
}

// log reads "log <vkey> [URL]"; the result says what is wrong ("" when nothing).
func (pp *policyParser) log(f []string) string {
	if len(f) < 2 || len(f) > 3 || pp.p.LogKey != "" {
		return `want one "log <vkey> [URL]"`
	}
	if _, err := ParseVKey(f[1]); err != nil {
		return fmt.Sprintf("log key: %v", err)
	}
	pp.p.LogKey = f[1]
	if len(f) == 3 {
		pp.p.LogURL = f[2]
	}
	return ""
}

// witness reads "witness <name> <vkey> [URL]" with a cosignature key.
func (pp *policyParser) witness(f []string) string {
	if len(f) < 3 || len(f) > 4 {
		return `want "witness <name> <vkey> [URL]"`
	}
	if _, dup := pp.members[f[1]]; dup {
		return fmt.Sprintf("witness %q named twice", f[1])
	}
	v, err := ParseVKey(f[2])
	if err != nil {
		return fmt.Sprintf("witness %s: %v", f[1], err)
	}
	if cv, ok := v.(*cosignVerifier); !ok || (cv.typ != SigCosignEd25519 && cv.typ != SigCosignMLDSA44) {
		return fmt.Sprintf("witness %s: not a cosignature key (type 0x04 or 0x06)", f[1])
	}
	w := PolicyWitness{Name: f[1], VKey: f[2]}
	if len(f) == 4 {
		w.URL = f[3]
	}
	pp.members[f[1]] = len(pp.p.Witnesses)
	pp.p.Witnesses = append(pp.p.Witnesses, w)
	return ""
}

// group reads the one "group <name> <any|all|N> <member>..." of witnesses defined above.
func (pp *policyParser) group(f []string) string {
	if len(f) < 4 {
		return `want "group <name> <any|all|N> <member>..."`
	}
	if len(pp.groups) > 0 {
		return "more than one group: nested policies are not supported here"
	}
	for _, m := range f[3:] {
		if _, ok := pp.members[m]; !ok {
			return fmt.Sprintf("group %s: %q is not a witness defined above", f[1], m)
		}
	}
	n := 0
	switch f[2] {
	case "any":
		n = 1
	case "all":
		n = len(f) - 3
	default:
		v, err := strconv.Atoi(f[2])
		if err != nil || v < 1 || v > len(f)-3 {
			return fmt.Sprintf("group %s: threshold %q is not any, all or 1..%d", f[1], f[2], len(f)-3)
		}
		n = v
	}
	pp.groups[f[1]] = n
	pp.groupMembers[f[1]] = f[3:]
	pp.p.Name = f[1]
	return ""
}

// finish checks the policy has its log and quorum and keeps only the quorum's witnesses.
func (pp *policyParser) finish() (Policy, error) {
	p := pp.p
	if p.LogKey == "" {
		return Policy{}, fmt.Errorf("%w: no log line", ErrPolicy)
	}
	switch quorum := pp.quorum; {
	case quorum == "":
		return Policy{}, fmt.Errorf("%w: no quorum line", ErrPolicy)
	case quorum == "none":
		p.Threshold = 0
	case pp.groups[quorum] > 0:
		p.Threshold = pp.groups[quorum]
		// Only the group's members count.
		var ws []PolicyWitness
		for _, m := range pp.groupMembers[quorum] {
			ws = append(ws, p.Witnesses[pp.members[m]])
		}
		p.Witnesses = ws
	default:
		i, ok := pp.members[quorum]
		if !ok {
			return Policy{}, fmt.Errorf("%w: quorum %q is neither a group nor a witness", ErrPolicy, quorum)
		}
		p.Witnesses, p.Threshold, p.Name = []PolicyWitness{p.Witnesses[i]}, 1, quorum
	}
	return p, nil
}

// PolicyResult is how a checkpoint stands against a policy.
type PolicyResult struct {
	// Policy is the policy's name.
	Policy string `json:"policy"`
	// Satisfied: the log signed it and at least Threshold members cosigned it.
	Satisfied bool `json:"satisfied"`
	// Cosigned names the members whose valid cosignature it carries.
	Cosigned []string `json:"cosigned"`
	// Threshold and Members are the policy's numbers.
	Threshold int `json:"threshold"`
	Members   int `json:"members"`
}

// String says it in one line: "ecosystem: satisfied (2 of 3 witnesses cosigned, 2 needed)".
func (r PolicyResult) String() string {
	if r.Threshold == 0 {
		return fmt.Sprintf("%s: no witness required (quorum none): the log's signature alone, which does not show the log was not forked", r.Policy)
	}
	state := "NOT satisfied"
	if r.Satisfied {
		state = "satisfied"
	}
	who := ""
	if len(r.Cosigned) > 0 {
		who = ": " + strings.Join(r.Cosigned, ", ")
	}
	return fmt.Sprintf("%s: %s (%d of %d witnesses cosigned, %d needed%s)", r.Policy, state, len(r.Cosigned), r.Members, r.Threshold, who)
}

// CheckPolicy checks checkpoint note msg against p: the log's signature (by p's log key,
// origin its name) must hold, and every cosignature by a member's key must verify; it then
// counts the members that cosigned. A signature that does not verify, or a missing log
// signature, is an error (not an unsatisfied policy).
func CheckPolicy(msg []byte, p Policy) (PolicyResult, error) {
	r := PolicyResult{Policy: p.Name, Threshold: p.Threshold, Members: len(p.Witnesses)}
	vs := []note.Verifier{}
	for _, w := range p.Witnesses {
		v, err := ParseVKey(w.VKey)
		if err != nil {
			return r, fmt.Errorf("policy %s: witness %s: %w", p.Name, w.Name, err)
		}
		vs = append(vs, v)
	}
	vc, err := VerifyCheckpoint(msg, Trust{LogKey: p.LogKey})
	if err != nil {
		return r, err
	}
	n, err := note.Open(msg, note.VerifierList(append([]note.Verifier{mustVerifier(p.LogKey)}, vs...)...))
	if err != nil {
		var ise *note.InvalidSignatureError
		if errors.As(err, &ise) {
			return r, fmt.Errorf("checkpoint %d: the cosignature of %s does not verify", vc.Size, ise.Name)
		}
		return r, fmt.Errorf("checkpoint %d: %w", vc.Size, err)
	}
	for i, v := range vs {
		for _, s := range n.Sigs {
			if s.Name == v.Name() && s.Hash == v.KeyHash() {
				r.Cosigned = append(r.Cosigned, p.Witnesses[i].Name)
				break
			}
		}
	}
	r.Satisfied = len(r.Cosigned) >= p.Threshold
	return r, nil
}

func mustVerifier(vkey string) note.Verifier {
	v, _ := ParseVKey(vkey)
	return v
}

// Policy names the log publishes.
const (
	PolicyEcosystem   = "ecosystem"
	PolicyPostQuantum = "post-quantum"
)

// Policies returns the log's two witness policies over its registered witnesses: ecosystem
// (every witness's Ed25519 cosignature/v1 key, the key type every C2SP witness has) and
// post-quantum (the ML-DSA-44 cosignature keys of the witnesses that have one), each needing
// quorum of its members (fewer when it has fewer). logURL is where the log's files are served.
func (l *Log) Policies(ctx context.Context, logURL string, quorum int) ([]Policy, error) {
	var ws []Witness
	if l.wit != nil {
		var err error
		if ws, err = l.wit.Witnesses(ctx); err != nil {
			return nil, err
		}
	}
	eco := Policy{Name: PolicyEcosystem, LogKey: l.VerifierKey(), LogURL: logURL, Comment: []string{
		"Witness policy of the log " + l.cfg.Origin + " (pqrepro): Ed25519 cosignature/v1",
		"(c2sp.org/tlog-cosignature), the key type every C2SP tlog-witness has.",
		"The log also publishes " + PolicyPostQuantum + ": the ML-DSA-44 cosignatures of its witnesses.",
	}}
	pq := Policy{Name: PolicyPostQuantum, LogKey: l.VerifierKey(), LogURL: logURL, Comment: []string{
		"Witness policy of the log " + l.cfg.Origin + " (pqrepro): ML-DSA-44 cosignatures",
		"(c2sp.org/tlog-cosignature, subtree/v1), for assurance that survives a quantum adversary.",
		"The log's own signature is Ed25519.",
	}}
	for _, w := range ws {
		eco.Witnesses = append(eco.Witnesses, PolicyWitness{Name: w.Name, VKey: w.Ed25519, URL: w.URL})
		if w.MLDSA44 != "" {
			pq.Witnesses = append(pq.Witnesses, PolicyWitness{Name: w.Name, VKey: w.MLDSA44})
		}
	}
	for _, p := range []*Policy{&eco, &pq} {
		p.Threshold = min(max(quorum, 1), len(p.Witnesses))
	}
	return []Policy{eco, pq}, nil
}
