// Package docstest holds the tests of the user documentation: README.md
// and the topic pages under docs/. The configuration reference is checked
// against the config parser, the README's size against its bound, and
// every relative link against the files it names. It has no code of its
// own.
package docstest
