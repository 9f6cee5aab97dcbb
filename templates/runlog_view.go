package templates

// RunLogView is a run's log page: the bundle's log.txt as human lines, the raw log behind a
// toggle when it holds a board's frames.
type RunLogView struct {
	Page
	ID                int64
	Experiment, Board string
	// Log is the raw log and HumanLog its human reading (artifacts/logtext), both bounded to
	// the log's head, every summary line and its tail; Omitted counts the bytes left out.
	Log, HumanLog string
	Framed        bool
	Omitted       int64
	// Size is the whole log's size in words; Trouble what the link did to recover lost or
	// damaged lines, counted in the whole log ("" when nothing).
	Size, Trouble string
}
