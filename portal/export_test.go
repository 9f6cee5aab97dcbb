package portal

// CompileARM is compileARM for the external tests (package portal_test).
var CompileARM = compileARM
