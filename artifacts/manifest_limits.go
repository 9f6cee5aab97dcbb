package artifacts

import (
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"pqrepro/artifacts/yamlcheck"
)

// checkTextFields bounds the manifest's free-text fields by MaxTextField, so a manifest that
// validates is one every reader accepts.
func (v *validator) checkTextFields(m *Manifest) {
	for _, f := range []struct{ path, val string }{
		{"metadata.title", m.Metadata.Title},
		{"metadata.description", m.Metadata.Description},
		{"spec.scenario", m.Spec.Scenario},
		{"spec.message.text", m.Spec.Message.Text},
	} {
		switch {
		case len(f.val) > MaxTextField:
			v.Add(f.path, "is at most %d bytes (MaxTextField), got %d", MaxTextField, len(f.val))
		case !utf8.ValidString(f.val):
			v.Add(f.path, "is not valid UTF-8")
		}
	}
}

// checkWritten makes sure the manifest as a bundle's manifest.yaml would hold it is within the
// limits a reader checks (MaxManifestBytes, MaxManifestNodes), so `run` never writes a bundle
// `verify` refuses.
func (v *validator) checkWritten(m *Manifest) {
	if len(v.Problems) > 0 {
		return
	}
	y := m.YAML()
	if len(y) > MaxManifestBytes {
		v.Add("(document)", "written out, this manifest would be %d bytes; a manifest is at most %d bytes (MaxManifestBytes)", len(y), MaxManifestBytes)
		return
	}
	var root yaml.Node
	if err := yaml.Unmarshal(y, &root); err == nil && yamlcheck.CountNodes(&root, MaxManifestNodes+1) > MaxManifestNodes {
		v.Add("(document)", "written out, this manifest would have more than %d YAML nodes (MaxManifestNodes)", MaxManifestNodes)
	}
}
