package portal

// A run's page.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/compare"
	"pqrepro/portal/plot"
	"pqrepro/portal/sqlite"
	"pqrepro/templates"
)

// firmwareBuildKVs shows the parts of a firmware build record (metadata.json) a reader needs:
// toolchain, flags and code size per algorithm as read from the ELF.
func firmwareBuildKVs(raw json.RawMessage) []templates.KV {
	var b struct {
		Toolchain string `json:"toolchain"`
		CFlags    string `json:"cflags"`
		KATs      string `json:"kat_vectors"`
		CodeSize  []struct {
			Group string `json:"group"`
			Total int    `json:"total"`
		} `json:"code_size"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &b) != nil {
		return nil
	}
	var sizes []string
	for _, c := range b.CodeSize {
		sizes = append(sizes, fmt.Sprintf("%s %d B", c.Group, c.Total))
	}
	return []templates.KV{{Key: "Firmware toolchain", Value: b.Toolchain}, {Key: "Firmware flags", Value: b.CFlags},
		{Key: "Firmware self-test vectors", Value: b.KATs}, {Key: "Code size (code + read-only data)", Value: strings.Join(sizes, ", ")}}
}

func (s *Server) runPage(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	r, err := s.store.Run(ctx, id)
	if err != nil {
		return err
	}
	cells, err := s.store.Cells(ctx, id)
	if err != nil {
		return err
	}
	v := templates.RunView{Page: s.page(c, fmt.Sprintf("Run %d", id)), ID: r.ID, JobID: r.JobID, Experiment: r.Experiment, Paper: r.Paper,
		Kind: r.Kind, Method: r.Method, Board: r.BoardClass, BoardName: r.BoardName, Assurance: templates.Assurance{Level: r.Level, Origin: r.Origin},
		BindingNote: bindingNote(r.Binding),
		Runner:      r.RunnerName, Submitter: r.Submitter, Signer: r.Signer, Bundle: r.Bundle, BundleSize: bytesHuman(r.BundleSize), Firmware: r.Firmware,
		ManifestID: r.ManifestID, Started: when(r.StartedAt), Finished: when(r.FinishedAt), Published: when(r.PublishedAt),
		Duration: r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()}
	if v.Firmware == "" {
		v.Firmware = "none (the board needs no firmware)"
	}
	rev, err := s.store.SignerRevoked(ctx, r)
	if err != nil {
		return err
	}
	v.SignerRevoked = whenSet(rev)
	var rows []plot.Row
	unit := ""
	for _, cl := range cells {
		row := templates.CellRow{Algorithm: cl.Algorithm, Operation: cl.Operation, Status: cl.Status, Error: cl.Error, Unit: cl.Unit, Heap: "–", Stack: "–", Keys: cmp.Or(cl.Keys, "–")}
		if st := cl.Stats; st != nil {
			row.N = st.N
			row.Min, row.P25, row.Median, row.P75 = cellValue(st.Min, cl.Unit), cellValue(st.P25, cl.Unit), cellValue(st.Median, cl.Unit), cellValue(st.P75, cl.Unit)
			row.Max, row.Mean, row.Stddev = cellValue(st.Max, cl.Unit), cellValue(st.Mean, cl.Unit), cellValue(st.Stddev, cl.Unit)
			if unit == "" {
				unit = cl.Unit
			}
			if cl.Unit == unit {
				rows = append(rows, plot.Row{Label: cl.Algorithm + " " + cl.Operation, Min: st.Min, P25: st.P25, Median: st.Median, P75: st.P75, Max: st.Max})
			}
		}
		if cl.Memory != nil && cl.Memory.HeapBytesPerOp != nil {
			row.Heap = human(*cl.Memory.HeapBytesPerOp, "B")
		}
		if cl.Memory != nil && cl.Memory.StackBytes != nil {
			row.Stack = human(float64(*cl.Memory.StackBytes), "B")
		}
		v.Cells = append(v.Cells, row)
	}
	v.Plot = plot.Layout(rows, unitTitle(unit), func(x float64) string { return human(x, unit) })
	v.PlotNote = "Box: p25 to p75 with the median; whiskers: min to max."
	if v.Plot != nil && v.Plot.Log {
		v.PlotNote += " Log axis: the values span more than an order of magnitude."
	}
	v.Timing = s.runTiming(r.ClassStatus, nil)
	var env artifacts.Environment
	if err := json.Unmarshal([]byte(r.Environment), &env); err == nil {
		v.Timing = s.runTiming(r.ClassStatus, &env)
		libs := []string{}
		for k, ver := range env.Libraries {
			libs = append(libs, k+" "+ver)
		}
		slices.Sort(libs)
		v.Environment = []templates.KV{
			{Key: "Runner version", Value: env.RunnerVersion}, {Key: "Go", Value: env.GoVersion}, {Key: "OS / arch", Value: env.OS + "/" + env.Arch + " " + env.Kernel},
			{Key: "CPU", Value: fmt.Sprintf("%s (%d logical)", env.CPUModel, env.CPUs)}, {Key: "Virtualized", Value: strconv.FormatBool(env.Virtualized)},
			{Key: "Board", Value: fmt.Sprintf("%s, class %s, driver %s, chip %s", env.Board.Name, env.Board.Class, env.Board.Driver, env.Board.Chip)},
			{Key: "Board RNG", Value: env.Board.RNG}, {Key: "Timer", Value: env.TimerSource}, {Key: "Energy", Value: env.EnergySource},
			{Key: "Libraries", Value: strings.Join(libs, ", ")},
		}
		if env.Board.Emulator != "" {
			v.Environment = append(v.Environment, templates.KV{Key: "Emulator", Value: env.Board.Emulator})
		}
		v.Environment = append(v.Environment, firmwareBuildKVs(env.Board.FirmwareBuild)...)
	}
	json.Unmarshal([]byte(r.Checks), &v.Checks)
	var rep compare.Report
	if err := json.Unmarshal([]byte(r.Report), &rep); err != nil {
		return fmt.Errorf("run %d report: %w", id, err)
	}
	v.Dataset, v.Tolerance = rep.Dataset, fmt.Sprintf("%.0f%%", rep.Tolerance*100)
	v.Comparison, v.NotComparable = comparisonView(rep)
	v.Claims = claimResultRows(rep, r.Origin)
	if r.Kind == artifacts.KindTLSMatrix {
		if v.HeatMap, err = s.runHeatMap(ctx, r); err != nil {
			return err
		}
	}
	return s.render(c, http.StatusOK, templates.RunPage(v))
}

// bindingNote says, for a run page, how the run's signed bundle is bound.
func bindingNote(binding string) string {
	switch binding {
	case sqlite.BindingUnbound:
		return "unbound: a community submission, signed without a job of this portal"
	case sqlite.BindingLegacy:
		return "legacy: a v1 bundle (or one published before bundles were bound to their job); its signature is checked, its job binding cannot be"
	}
	return ""
}
