package artifacts

// Limits on what a result may hold, enforced where bundles are written (the runner refuses to
// sign a result beyond them) as well as where they are read (verify, the portal's ingest).
// They are far above what any experiment in this project produces, and low enough that one
// bundle cannot make a leaderboard, a page or the store slow for everyone.
const (
	// MaxCells is the most cells one result may hold (paper002/signatures-openssl has 42).
	MaxCells = 4096
	// MaxSamplesPerCell is the most timed samples one cell may hold, and so the most
	// iterations a manifest may ask for. It also bounds the comparison's work: a bootstrap
	// interval costs resamples × n draws.
	MaxSamplesPerCell = 100_000
	// MaxVariants is the most variant cells (a corrected openssl command) one manifest cell may
	// have beside it.
	MaxVariants = 1
	// MaxManifestBytes is the largest manifest accepted, before it is decoded.
	MaxManifestBytes = 64 << 10
	// MaxManifestNodes bounds the YAML nodes (keys, values, list items) of a manifest, counted
	// before it is decoded into Go values.
	MaxManifestNodes = 4096
	// MaxTextField is the longest free-text field (title, description, scenario) in a manifest.
	MaxTextField = 4096
)
