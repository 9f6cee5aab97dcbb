package templates

import "fmt"

// LogStatusView is a run's place in the portal's transparency log, for the run page.
type LogStatusView struct {
	RunID int64
	// Origin is the log's origin line.
	Origin string
	// Pending: published, not yet in a checkpoint.
	Pending bool
	// NotLogged: the run was published before the log existed.
	NotLogged bool
	// Unavailable: the status could not be read (logged).
	Unavailable bool
	// Index and TreeSize place the leaf in the checkpoint the proof is against.
	Index    int64
	TreeSize int64
	// Proof is the inclusion path (base64 hashes, leaf to root).
	Proof []string
	// Witnessed counts cosignature lines on that checkpoint (one per witness key).
	Witnessed int
	// Policies say which of the log's witness policies that checkpoint satisfies.
	Policies []LogPolicyView
	// InclusionURL is the API answer with checkpoint and proof.
	InclusionURL string
	// LogURL and LogKey are what `pqrepro verify --log --log-key` takes: the log's address and
	// its verifier key, so the offline check is a line to copy, not a template to fill in.
	LogURL, LogKey string
}

// LogHomeView is the log's front door (/log): its origin, address, key and size, and where its
// files and witness policies are.
type LogHomeView struct {
	Page
	Origin, LogURL, LogKey string
	// Size is the published checkpoint's size; Pending the runs not yet in it.
	Size    int64
	Pending int
}

// LogPolicyView is how a checkpoint stands against one of the log's witness policies.
type LogPolicyView struct {
	// Name is the policy's ("ecosystem", "post-quantum"); URL where its text is served.
	Name, URL string
	// Satisfied: at least Threshold of its Members cosigned; Cosigned of them did.
	Satisfied                    bool
	Cosigned, Threshold, Members int
}

// Entries says how many runs the published checkpoint holds and how many wait for the next.
func (v LogHomeView) Entries() string {
	s := fmt.Sprintf("%d in the published checkpoint", v.Size)
	if v.Pending > 0 {
		s += fmt.Sprintf("; %d published runs not yet in a checkpoint", v.Pending)
	}
	return s
}
