package mcpauth

// CalledTools is calledTools, for the tests.
var CalledTools = calledTools
