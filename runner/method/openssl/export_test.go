package openssl

// Test helpers for the tests of the openssl-cli method through the host board
// (package openssl_test).
var (
	TestConfig   = testOpenSSL
	TestManifest = opensslManifest
	FakeOpenSSL  = fakeOpenSSL
)
