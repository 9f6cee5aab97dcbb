package templates

// RunTiming is a run's board class check (verified or declared, with why) and the timing
// context its host timings were taken in.
type RunTiming struct {
	ClassStatus, ClassNote string
	// Present is false for runs recorded before the timing context existed.
	Present bool
	// Scope says whose timings the context concerns (the host board's, or the host only).
	Scope           string
	Virtual, Loaded bool
	Warnings        []string
	Facts           []KV
}

func (t RunTiming) classNoteSuffix() string {
	if t.ClassNote == "" {
		return ""
	}
	return ": " + t.ClassNote
}
