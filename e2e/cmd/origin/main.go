// Command origin is the testbed's web server and page corpus; see package
// github.com/mpsurf/mpsurf/e2e/origin.
package main

import (
	"os"

	"github.com/mpsurf/mpsurf/e2e/origin"
)

func main() {
	os.Exit(origin.Main(os.Args[1:], os.Stdout, os.Stderr))
}
