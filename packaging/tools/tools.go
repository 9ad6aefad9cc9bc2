// Package tools pins the packaging tools the build runs (go.mod's tool directive: nfpm), in a module of its own
// so that the project's module does not depend on them.
package tools
