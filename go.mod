module github.com/mpsurf/mpsurf

go 1.24
