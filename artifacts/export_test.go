package artifacts

// Exported for the external tests (signed_test.go), which sign bundles with artifacts/attest:
// attest imports this package, so those tests cannot live inside it.
var (
	TestBundleFiles = bundleTestFiles
	TestTLSFixture  = tlsFixture
)
