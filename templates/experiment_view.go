package templates

import "strconv"

// batchNote completes the re-run form's iterations label for a TLS matrix whose CPU batch
// is batch handshakes ("" for other kinds): the iteration override lowers the batch, as
// pqrepro run does (artifacts.Manifest.OverrideIterations).
func batchNote(batch int) string {
	if batch <= 1 {
		return ""
	}
	return "; below " + strconv.Itoa(batch) + " iterations the CPU batch of " + strconv.Itoa(batch) + " handshakes is lowered to them"
}
