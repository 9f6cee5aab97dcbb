package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"pqrepro/energy"
	"pqrepro/energy/fnb58"
)

func main() {
	files, _ := filepath.Glob("/work/shared/reference-data/paper002-energy-openssl/raw/power_readings/" + os.Args[1] + "/csv_files/*.csv")
	sort.Strings(files)
	var idle *fnb58.Capture
	for _, f := range files {
		fh, _ := os.Open(f)
		c, err := fnb58.ReadCSV(fh, filepath.Base(f))
		fh.Close()
		if err != nil {
			panic(err)
		}
		if idle == nil {
			idle = c
		}
		t0 := time.Now()
		e, err := energy.PerOperation(idle.Trace, c.Trace, 1, energy.Options{})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%-42s n=%6d upd=%4.1f blk=%4d/%4d mean=%.5f ±%.5f dP=%.5f [%.5f,%.5f] %v\n", filepath.Base(f), len(c.Power), c.UpdateRate(), e.Idle.Block, e.Load.Block, e.Load.Mean.Point, e.Load.Mean.Width()/2, e.Delta.Point, e.Delta.Lo, e.Delta.Hi, time.Since(t0).Round(time.Microsecond))
	}
}
