// Package acvppick chooses which NIST ACVP tests of a group the emulated boards embed. vecgen
// (the C tables) and vecsubset (the project's copy of the vectors) both use it, so the copy
// holds exactly the tests the boards' self-test runs.
package acvppick

// Pick keeps at most max tests, alternating between outcomes (key gives a test's outcome,
// e.g. its "reason" or "testPassed"), in order of first appearance. max <= 0 keeps all.
func Pick[T any](tests []T, max int, key func(T) (string, error)) ([]T, error) {
	if max <= 0 || len(tests) <= max {
		return tests, nil
	}
	var order []string
	by := map[string][]T{}
	for _, t := range tests {
		k, err := key(t)
		if err != nil {
			return nil, err
		}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], t)
	}
	var kept []T
	for i := 0; len(kept) < max; i++ {
		added := false
		for _, k := range order {
			if i < len(by[k]) && len(kept) < max {
				kept = append(kept, by[k][i])
				added = true
			}
		}
		if !added {
			break
		}
	}
	return kept, nil
}
