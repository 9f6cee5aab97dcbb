// Package artifacts is the contract between pqrepro's runner and its portal: what an
// experiment asks for and what a run produced, in the forms both sides read and write.
//
//   - Manifest: an experiment (kind, algorithms, operations, method, iterations, the board
//     budget), parsed with every problem reported at once (artifacts/yamlcheck), and the kinds
//     themselves as one table of KindDef (kinds.go), each with its spec, cells and checks.
//   - Result, Cell and Samples: what was measured, with the implementation behind every cell,
//     and Rederive, which recomputes a result's statistics from its samples so nothing
//     published is taken on trust.
//   - Bundle: a run's files (manifest.yaml, result.json, samples.csv, environment.json,
//     run.log, and the attestation), read and written within Limits; Digest names content.
//
// Signing is artifacts/attest, keys artifacts/identity, the runner protocol artifacts/protocol,
// and the serial log grammar artifacts/logtext. This package imports none of them, and neither
// runner nor portal is imported here.
package artifacts
