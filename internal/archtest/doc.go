// Package archtest holds the tests of the project's import rules: which
// package may depend on which. It has no code of its own.
package archtest
